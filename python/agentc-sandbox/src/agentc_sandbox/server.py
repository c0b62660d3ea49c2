"""One `agentc serve --stdio` process and the JSON-RPC 2.0 conversation with it.

The protocol is docs/serve.md of the agentc repository: one JSON message per line on the
server's stdin and stdout, requests answered by id in any order, `exec.output` notifications for
streamed execs, bytes as base64. `AgentcServer` starts the process, writes requests, and runs
one reader task that resolves each request's future by id and hands `exec.output` chunks to the
callback of the exec they belong to. An exec whose awaiting task is cancelled is cancelled in the
server too (`cancel`: its processes are stopped). Closing it sends `shutdown`, closes stdin and
waits: the server then deletes the sandboxes it created without `keep` (it does the same when
stdin closes because this process died).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import itertools
import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import AgentcBinaryNotFound, AgentcError, AgentcServerExited

logger = logging.getLogger("agentc_sandbox.server")

#: The protocol version this package speaks (`initialize`'s `protocol`).
PROTOCOL_VERSION = 1

#: Environment variable naming the agentc executable.
BINARY_ENV = "AGENTC_BIN"

# The server reads request lines of up to 256 MiB; answers (a read_tar of a big workspace) can be
# as long. asyncio's StreamReader refuses a line longer than its limit, so allow that much.
_LINE_LIMIT = 512 * 1024 * 1024
_STDERR_TAIL_BYTES = 64 * 1024
# How long a cancelled exec's task waits for the server to confirm that the command's processes
# were stopped (the exec's own answer, -32800) before it gives up waiting.
_CANCEL_WAIT_S = 30.0
# An exec the server has not registered yet answers `cancel` with false: asked again this often.
_CANCEL_RETRY_S = 0.02

OutputCallback = Callable[[str, bytes], None]


def find_agentc(binary: str | os.PathLike[str] | None = None) -> str:
    """The agentc executable: `binary`, else ``$AGENTC_BIN``, else `agentc` on ``PATH``."""
    candidate = os.fspath(binary) if binary is not None else os.environ.get(BINARY_ENV)
    if candidate:
        path = Path(candidate).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.resolve())
        found = shutil.which(candidate)
        if found:
            return found
        raise AgentcBinaryNotFound(
            f"agentc executable {candidate!r} (from "
            f"{'the binary argument' if binary is not None else BINARY_ENV}) does not exist or "
            "is not executable"
        )
    found = shutil.which("agentc")
    if found:
        return found
    raise AgentcBinaryNotFound(
        f"no agentc executable: set {BINARY_ENV} to its path or put `agentc` on PATH "
        "(cargo build -p agentc builds target/debug/agentc)"
    )


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str | None) -> bytes:
    if not text:
        return b""
    return base64.b64decode(text)


class AgentcServer:
    """A running `agentc serve --stdio [--backend B] [--engine E]`.

    Use ``await server.start()`` (or ``async with``), then `request`. One server serves any
    number of sandboxes and overlapping requests. It belongs to the event loop that started it.
    """

    def __init__(
        self,
        binary: str | os.PathLike[str] | None = None,
        *,
        backend: str | None = None,
        engine: str | None = None,
        verbose: bool = False,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.binary = find_agentc(binary)
        self.backend = backend
        self.engine = engine
        self.verbose = verbose
        self._env = dict(env) if env is not None else None
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._proc: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None
        self._stderr_tail: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._output: dict[int, OutputCallback] = {}
        self._write_lock: asyncio.Lock | None = None
        self._cancelling: set[asyncio.Task[None]] = set()
        self._closed = False
        self._exit_error: AgentcServerExited | None = None
        self.info: dict[str, Any] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def argv(self) -> list[str]:
        argv = [self.binary, "serve", "--stdio"]
        if self.backend:
            argv += ["--backend", self.backend]
        if self.engine:
            argv += ["--engine", self.engine]
        if self.verbose:
            argv.append("--verbose")
        return argv

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    @property
    def alive(self) -> bool:
        return (
            self._proc is not None
            and self._proc.returncode is None
            and self._exit_error is None
            and not self._closed
        )

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    def stderr_tail(self) -> str:
        return b"".join(self._stderr_tail).decode("utf-8", errors="replace")

    async def start(self) -> dict[str, Any]:
        """Starts the process and sends `initialize`; returns its result."""
        if self._proc is not None:
            raise RuntimeError("AgentcServer.start() called twice")
        self._loop = asyncio.get_running_loop()
        self._write_lock = asyncio.Lock()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                limit=_LINE_LIMIT,
                # Its own process group: a Ctrl-C meant for this program's terminal does not
                # reach the server first, so it is this client that ends it (shutdown, then
                # stdin closed), which deletes its sandboxes in order.
                start_new_session=True,
            )
        except OSError as error:
            raise AgentcServerExited(f"cannot start {self.binary}: {error}") from error
        logger.debug("started %s (pid %s)", " ".join(self.argv()), self._proc.pid)
        self._reader = asyncio.create_task(self._read_stdout(), name="agentc-serve-reader")
        self._stderr_reader = asyncio.create_task(self._read_stderr(), name="agentc-serve-stderr")
        try:
            self.info = await self.request("initialize", {})
        except BaseException:
            await self.close(timeout=5)
            raise
        protocol = self.info.get("protocol")
        if protocol != PROTOCOL_VERSION:
            await self.close(timeout=5)
            raise AgentcServerExited(
                f"{self.binary} speaks protocol {protocol!r}; this package speaks "
                f"{PROTOCOL_VERSION}"
            )
        return self.info

    async def __aenter__(self) -> AgentcServer:
        if self._proc is None:
            await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self, timeout: float = 60.0) -> dict[str, Any] | None:
        """Sends `shutdown`, closes stdin and waits for the process (killing it after
        `timeout` seconds). Returns `shutdown`'s result (``{"deleted": [...]}``) when it came."""
        if self._proc is None or self._closed:
            return None
        result: dict[str, Any] | None = None
        if self.alive:
            try:
                result = await asyncio.wait_for(self.request("shutdown", {}), timeout)
            except (AgentcError, asyncio.TimeoutError, OSError) as error:
                logger.debug("shutdown: %s", error)
        self._closed = True
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
            try:
                await proc.stdin.wait_closed()
            except (OSError, RuntimeError):
                pass
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            logger.warning("agentc serve (pid %s) did not exit; killing it", proc.pid)
            proc.kill()
            await proc.wait()
        for task in (self._reader, self._stderr_reader):
            if task is not None:
                try:
                    await asyncio.wait_for(task, 5)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    task.cancel()
        self._fail_pending(AgentcServerExited("agentc serve was closed"))
        if self._cancelling:
            await asyncio.wait(list(self._cancelling), timeout=5)
        return result

    def terminate_nowait(self) -> None:
        """SIGTERM for a server whose event loop is gone: it deletes its sandboxes not kept
        and exits. (A client belongs to the event loop that started its server; this is the
        way out when that loop ended first.)"""
        proc = self._proc
        self._closed = True
        if proc is None:
            return
        if proc.returncode is None:
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        loop = self._loop
        transport = getattr(proc, "_transport", None)
        if loop is not None and loop.is_closed() and transport is not None:
            # Its transport cannot be closed through a closed loop; spare its finalizer the try.
            transport._closed = True

    async def wait_gone(self, timeout: float = 60.0) -> bool:
        """Waits (from any event loop) until the process has exited; False on timeout."""
        pid = self.pid
        if pid is None:
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    return True
            except ChildProcessError:  # reaped elsewhere (the loop's child watcher)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return True
            await asyncio.sleep(0.05)
        return False

    # -- requests --------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_output: OutputCallback | None = None,
    ) -> Any:
        """Sends one request and waits for its answer; raises `AgentcError` for an error.

        `on_output(stream, data)` receives the `exec.output` notifications of a streamed exec.
        When the task awaiting an `exec` is cancelled, the server is sent `cancel` for it (which
        stops the command's processes) before the `CancelledError` goes on.
        """
        if self._proc is None or self._proc.stdin is None:
            raise AgentcServerExited("agentc serve is not started", method=method)
        if self._exit_error is not None:
            raise AgentcServerExited(str(self._exit_error.message), method=method)
        if self._closed and method != "shutdown":
            raise AgentcServerExited("agentc serve was closed", method=method)
        request_id = next(self._ids)
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": dict(params or {}),
        }
        line = (
            json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = (method, future)
        if on_output is not None:
            self._output[request_id] = on_output
        sent = cancelling = False
        try:
            assert self._write_lock is not None
            async with self._write_lock:
                self._proc.stdin.write(line)
                sent = True
                await self._proc.stdin.drain()
            if method == "exec":
                # Shielded: a cancelled task leaves the future to the exec's own answer, which
                # `_cancel_exec` waits for.
                return await asyncio.shield(future)
            return await future
        except asyncio.CancelledError:
            if sent and method == "exec":
                self._output.pop(request_id, None)
                cancelling = True  # the exec's entry is `_cancel_exec`'s to remove
                await self._cancel_exec(request_id, future)
            raise
        except (BrokenPipeError, ConnectionResetError) as error:
            raise self._exited(method) from error
        finally:
            if not cancelling:
                self._pending.pop(request_id, None)
            self._output.pop(request_id, None)

    async def _cancel_exec(self, request_id: int, future: asyncio.Future[Any]) -> None:
        """`cancel` for exec `request_id`, whose awaiting task was cancelled; returns once the
        exec has answered (the server answers it after stopping its processes), or after
        `_CANCEL_WAIT_S`; the exec's entry in `_pending` goes then. A second cancellation of the
        caller stops only the waiting."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CANCEL_WAIT_S

        async def _cancel() -> None:
            try:
                # `cancel` answers false for an exec the server has not registered yet (its
                # request still on the way in): asked again until it is registered or answered.
                while self.alive and not future.done():
                    try:
                        result = await self.request("cancel", {"id": request_id})
                    except AgentcError as error:
                        logger.debug("cancel of exec %s: %s", request_id, error)
                        return
                    if (result or {}).get("cancelled") or loop.time() >= deadline:
                        break
                    await asyncio.sleep(_CANCEL_RETRY_S)
                await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - loop.time()))
            except (AgentcError, asyncio.TimeoutError, asyncio.CancelledError):
                pass
            finally:
                self._pending.pop(request_id, None)

        task = loop.create_task(_cancel(), name=f"agentc-serve-cancel-{request_id}")
        self._cancelling.add(task)
        task.add_done_callback(self._cancelling.discard)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            pass  # cancelled again: the cancel goes on without this task

    def _exited(self, method: str | None) -> AgentcServerExited:
        code = self.returncode
        tail = self.stderr_tail().strip()
        text = "agentc serve exited" + (f" with status {code}" if code is not None else "")
        if tail:
            text += f"; its stderr ended with:\n{tail[-4000:]}"
        return AgentcServerExited(text, method=method)

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        try:
            while True:
                try:
                    line = await stdout.readline()
                except ValueError as error:  # a line over the limit
                    logger.error("agentc serve: unreadable answer: %s", error)
                    break
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    logger.error("agentc serve wrote a line that is not JSON: %r", line[:200])
                    continue
                self._dispatch(message)
        finally:
            if self._proc.returncode is None:
                try:
                    await asyncio.wait_for(self._proc.wait(), 5)
                except asyncio.TimeoutError:
                    pass
            if self._stderr_reader is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._stderr_reader), 2)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    pass
            error = self._exited(None)
            self._exit_error = error
            self._fail_pending(error)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "id" not in message or message.get("method") is not None:
            self._notification(message)
            return
        request_id = message.get("id")
        entry = self._pending.get(request_id) if isinstance(request_id, int) else None
        if entry is None:
            if request_id is None and "error" in message:
                logger.error("agentc serve: %s", message["error"].get("message"))
            return
        method, future = entry
        if future.done():
            return
        if "error" in message and message["error"] is not None:
            future.set_exception(AgentcError.from_rpc(message["error"], method=method))
        else:
            future.set_result(message.get("result"))

    def _notification(self, message: dict[str, Any]) -> None:
        if message.get("method") != "exec.output":
            logger.debug("agentc serve: notification %s", message.get("method"))
            return
        params = message.get("params") or {}
        callback = self._output.get(params.get("id"))
        if callback is None:
            return
        try:
            callback(str(params.get("stream", "stdout")), b64decode(params.get("data")))
        except Exception:  # a caller's callback must not stop the reader
            logger.exception("exec.output callback failed")

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr
        while True:
            chunk = await stderr.read(8192)
            if not chunk:
                return
            self._stderr_tail.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size > _STDERR_TAIL_BYTES and len(self._stderr_tail) > 1:
                self._stderr_size -= len(self._stderr_tail.popleft())
            if logger.isEnabledFor(logging.DEBUG):
                for text in chunk.decode("utf-8", errors="replace").splitlines():
                    logger.debug("agentc serve: %s", text)

    def _fail_pending(self, error: AgentcError) -> None:
        for request_id, (method, future) in list(self._pending.items()):
            if not future.done():
                future.set_exception(AgentcServerExited(error.message, method=method))
            self._pending.pop(request_id, None)

    # -- typed helpers for each method -----------------------------------------------------

    async def exec(
        self,
        sandbox: str,
        argv: Sequence[str] | None = None,
        *,
        shell: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> dict[str, Any]:
        """`exec`: returns ``{exit_code, timed_out, stdout, stderr}`` with the output decoded to
        bytes. With `on_output`, the command streams and the result's output is empty."""
        params: dict[str, Any] = {"sandbox": sandbox}
        if argv is not None:
            params["argv"] = [str(arg) for arg in argv]
        if shell is not None:
            params["shell"] = shell
        if cwd is not None:
            params["cwd"] = cwd
        if env:
            params["env"] = dict(env)
        if user is not None:
            params["user"] = user
        if timeout is not None:
            params["timeout"] = float(timeout)
        if stdin is not None:
            params["stdin"] = b64encode(stdin)
        if on_output is not None:
            params["stream"] = True
        result = await self.request("exec", params, on_output=on_output)
        result = dict(result or {})
        result["stdout"] = b64decode(result.get("stdout"))
        result["stderr"] = b64decode(result.get("stderr"))
        return result

    async def read_file(self, sandbox: str, path: str, *, user: str | None = None) -> bytes:
        params: dict[str, Any] = {"sandbox": sandbox, "path": path}
        if user is not None:
            params["user"] = user
        result = await self.request("read_file", params)
        return b64decode((result or {}).get("data"))

    async def write_file(
        self,
        sandbox: str,
        path: str,
        data: bytes,
        *,
        mode: int | None = None,
        user: str | None = None,
    ) -> int:
        params: dict[str, Any] = {"sandbox": sandbox, "path": path, "data": b64encode(data)}
        if mode is not None:
            params["mode"] = mode
        if user is not None:
            params["user"] = user
        result = await self.request("write_file", params)
        return int((result or {}).get("bytes", len(data)))

    async def read_tar(self, sandbox: str, path: str, *, user: str | None = None) -> bytes:
        params: dict[str, Any] = {"sandbox": sandbox, "path": path}
        if user is not None:
            params["user"] = user
        result = await self.request("read_tar", params)
        return b64decode((result or {}).get("data"))

    async def write_tar(
        self, sandbox: str, path: str, data: bytes, *, user: str | None = None
    ) -> int:
        params: dict[str, Any] = {"sandbox": sandbox, "path": path, "data": b64encode(data)}
        if user is not None:
            params["user"] = user
        result = await self.request("write_tar", params)
        return int((result or {}).get("bytes", len(data)))


__all__ = ["AgentcServer", "BINARY_ENV", "PROTOCOL_VERSION", "find_agentc"]
