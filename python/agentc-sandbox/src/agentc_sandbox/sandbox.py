"""The openai-agents sandbox client whose sandboxes agentc launches.

`AgentcSandboxClient` is a `BaseSandboxClient` (backend id ``"agentc"``): each session is one
agentc sandbox, created from a profile through one `agentc serve --stdio` process per client
(per backend and engine pair). The SDK's base session drives the rest: on `start()` it makes the
manifest's root and writes the manifest's entries through `exec`, `write` and `mkdir`;
`shutdown()` stops the sandbox and `start()` (or `resume`) starts it again, as the SDK's Docker
backend does; `delete` removes it.

A custom agentc profile has a read-only root; only tmpfs ``/tmp`` (noexec) and bound host
directories are writable. So the manifest's root (``/workspace`` by default) is a host directory
this client makes per session (a ``mkdtemp`` parent, mode 0700, holding a ``workspace`` directory
every container user may write) and binds writable at the root through `create`'s ``mounts``; it
is removed when the session is deleted. Being on the host, it is also where a file path's
symlinks are checked before a read or write, without a round trip to the sandbox. The SDK's
runtime helper scripts, which other backends install under ``/tmp`` and execute, are run inline
with ``sh -c`` instead (``/tmp`` is noexec).
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import logging
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from agents.sandbox.errors import (
    ExecTimeoutError,
    ExecTransportError,
    ExposedPortUnavailableError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.manifest import Manifest
from agents.sandbox.session import SandboxSession, SandboxSessionState
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.dependencies import Dependencies
from agents.sandbox.session.manager import Instrumentation
from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
from agents.sandbox.session.workspace_payloads import coerce_write_payload
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
from agents.sandbox.types import ExecResult, ExposedPortEndpoint, User
from agents.sandbox.util.tar_utils import UnsafeTarMemberError, validate_tarfile
from agents.sandbox.workspace_paths import posix_path_as_path, sandbox_path_str
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import AgentcError, AgentcNotFoundError, AgentcServerExited
from .server import AgentcServer

logger = logging.getLogger("agentc_sandbox")

# An exec whose timeout the server should enforce gets this much longer on the client side
# before the client gives up waiting for its answer.
_EXEC_TIMEOUT_GRACE_S = 60.0

_DEFAULT_PROFILE_NAME = "agentc-sdk"


class HostMount(BaseModel):
    """A host directory bound into the sandbox, as a profile's own ``[[mounts]]`` (agentc checks
    it by the same rules: binds of the home, credential or system directories are refused)."""

    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    read_only: bool = True

    def to_param(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "read_only": self.read_only}


class AgentcSandboxClientOptions(BaseSandboxClientOptions):
    """What `AgentcSandboxClient.create` launches.

    Attributes:
        profile: an agentc profile: the path of a TOML file, or TOML text (a string holding a
            newline or ``=``). ``None``: a minimal custom profile running ``image`` kept alive
            by ``tail -f /dev/null`` (as the SDK's Docker client does) behind docker's init,
            with agentc's default hardening.
        image: replaces the profile's image (``agentc run --image``); required without a profile.
        profile_dir: where a TOML text profile's relative paths lead (default: this process's
            working directory).
        backend: ``"api"`` (Engine API) or ``"cli"`` (the docker CLI); ``None``: the client's.
        engine: ``"docker"`` or ``"podman"``; ``None``: the client's.
        exposed_ports: container TCP ports published on 127.0.0.1 (`resolve_exposed_port`); a
            port the profile publishes too is published once.
        keep: keep the sandbox when the server ends (needed to `resume` it from another
            process); `delete` removes it either way.
        name: the container's name (default: agentc's ``agentc-session-PROFILE-PID-N``).
        env: environment of every exec, under the manifest's own environment.
        mounts: more host directories bound into the sandbox.
        workspace_dir: a host directory to bind at the manifest's root instead of a fresh
            temporary one; it is not removed on delete.
    """

    type: Literal["agentc"] = "agentc"
    profile: str | None = None
    image: str | None = None
    profile_dir: str | None = None
    backend: Literal["api", "cli"] | None = None
    engine: Literal["docker", "podman"] | None = None
    exposed_ports: tuple[int, ...] = ()
    keep: bool = False
    name: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    mounts: tuple[HostMount, ...] = ()
    workspace_dir: str | None = None

    @field_validator("profile", "profile_dir", "workspace_dir", mode="before")
    @classmethod
    def _coerce_path(cls, value: object) -> object:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        return value

    @field_validator("exposed_ports", mode="before")
    @classmethod
    def _coerce_ports(cls, value: object) -> object:
        if isinstance(value, int):
            return (value,)
        return value


class AgentcSandboxSessionState(SandboxSessionState):
    """A session's serializable state: enough to re-attach to its sandbox (`resume`), or to
    launch a replacement from the same profile when the sandbox is gone."""

    type: Literal["agentc"] = "agentc"
    sandbox: str
    sandbox_id: str = ""
    profile: str | None = None
    profile_text: str | None = None
    profile_dir: str | None = None
    image: str | None = None
    backend: str | None = None
    engine: str | None = None
    keep: bool = False
    name: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    mounts: tuple[HostMount, ...] = ()
    workspace_dir: str | None = None
    workspace_owned: bool = True

    def _sanitize_persisted_provider_identity(
        self, data: dict[str, Any], *, mount_authority_redacted: bool
    ) -> None:
        # openai-agents >= 0.20: a state whose mount credentials were redacted must not
        # re-attach to the live sandbox; `resume` then launches a fresh one (as Docker's does).
        if mount_authority_redacted:
            data["sandbox"] = ""
            data["sandbox_id"] = ""
            data["session_id"] = uuid.uuid5(
                uuid.NAMESPACE_URL, f"openai-agents:mount-authority-redacted:{self.session_id}"
            )
            data["workspace_root_ready"] = False


def default_profile_text(image: str, *, name: str = _DEFAULT_PROFILE_NAME) -> str:
    """The profile used without one: `image` kept alive by ``tail -f /dev/null`` (its
    ENTRYPOINT replaced, as the SDK's Docker client does) under agentc's default hardening, with
    docker's init as PID 1: it reaps the processes an exec leaves behind or a timeout kills
    (``tail`` would leave them zombies, counted against the process limit) and passes SIGTERM
    on, so that `shutdown()`'s stop is prompt rather than the engine's 10 s."""
    return "\n".join(
        [
            f"name = {json.dumps(name)}",
            'agent = "custom"',
            "",
            "[image]",
            f"ref = {json.dumps(image)}",
            'entrypoint = "tail"',
            'command = ["-f", "/dev/null"]',
            "init = true",
            "",
        ]
    )


def _profile_params(
    profile: str | None,
    *,
    profile_text: str | None = None,
    profile_dir: str | None,
    image: str | None,
) -> dict[str, Any]:
    """`create`'s profile params: ``profile`` (an absolute path) or ``profile_text`` with
    ``profile_dir``."""
    if profile_text is not None:
        return {"profile_text": profile_text, "profile_dir": profile_dir or os.getcwd()}
    if profile is None:
        if not image:
            raise ValueError(
                "AgentcSandboxClientOptions needs a profile (a path or TOML text) or an image"
            )
        return {
            "profile_text": default_profile_text(image),
            "profile_dir": profile_dir or os.getcwd(),
        }
    path = Path(profile).expanduser()
    if "\n" not in profile and path.is_file():
        return {"profile": str(path.resolve())}
    if "\n" in profile or "=" in profile:
        return {"profile_text": profile, "profile_dir": profile_dir or os.getcwd()}
    raise FileNotFoundError(f"agentc profile {profile!r} does not exist")


def _user_name(user: str | User | None) -> str | None:
    if isinstance(user, User):
        return user.name
    return user


def _read_all(stream: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = stream.read(1024 * 1024)
        if chunk in (b"", "", None):
            break
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        chunks.append(bytes(chunk))
    return b"".join(chunks)


def _rel_member(name: str) -> str:
    """A tar member's path relative to the archive's root: no ``./`` or leading ``/``."""
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    name = name.lstrip("/")
    return name.rstrip("/")


def portable_workspace_tar(data: bytes, *, root: str, skip: set[Path]) -> bytes:
    """The workspace archive `persist_workspace` returns: members relative to the workspace
    root (no ``.`` entry), those under `skip` left out, and absolute symlinks into the root made
    relative, so the archive extracts under any other session's root."""
    skip_posix = [PurePosixPath(p.as_posix()) for p in skip if p.as_posix() not in ("", ".")]
    root_posix = PurePosixPath(root)
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as source,
        tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as target,
    ):
        for member in source:
            rel = _rel_member(member.name)
            if rel in ("", "."):
                continue
            rel_path = PurePosixPath(rel)
            if any(rel_path == s or s in rel_path.parents for s in skip_posix):
                continue
            member.name = rel
            if member.issym() and member.linkname.startswith("/"):
                link = PurePosixPath(member.linkname)
                if link == root_posix or root_posix in link.parents:
                    member.linkname = posixpath.relpath(
                        str(link), str(root_posix / rel_path.parent)
                    )
            fileobj = source.extractfile(member) if member.isfile() else None
            target.addfile(member, fileobj)
    return out.getvalue()


# Symbolic links followed on the way before the host-side check gives up (Linux's own limit).
_MAX_SYMLINKS = 40


def _resolves_inside(path: PurePosixPath, root: PurePosixPath, host_root: str | None) -> bool:
    """Whether sandbox path `path` (absolute, normalized) resolves, symlinks followed as the
    sandbox's kernel would, to a place under `root`, shown on `host_root`, the host directory
    bound at `root`. False when that cannot be shown here: `path` or a link's target outside
    `root`, a `..` climbing out of it, a directory this user cannot read, too many links. A
    missing tail is fine (a write makes it). The host directory holds everything under the root
    (agentc refuses a bind nested in another's target)."""
    if not host_root:
        return False
    try:
        pending = list(path.relative_to(root).parts)
    except ValueError:
        return False
    resolved: list[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return False
            resolved.pop()
            continue
        candidate = os.path.join(host_root, *resolved, part)
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            # The rest does not exist yet: it lies under what is resolved, unless it climbs.
            return ".." not in pending
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > _MAX_SYMLINKS:
                return False
            try:
                target = PurePosixPath(os.readlink(candidate))
            except OSError:
                return False
            if target.is_absolute():
                try:
                    target = target.relative_to(root)
                except ValueError:
                    return False
                resolved = []
            pending = list(target.parts) + pending
            continue
        resolved.append(part)
        if pending and not stat.S_ISDIR(info.st_mode):
            # Not a directory, and more to come: the I/O fails in the sandbox, inside the root.
            return ".." not in pending
    return True


def _remove_tree(path: str) -> None:
    """Removes a workspace directory whatever modes the container left on it."""

    def _on_error(function: Any, failed: str, _excinfo: Any) -> None:
        try:
            parent = os.path.dirname(failed)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, os.stat(failed).st_mode | stat.S_IRWXU)
            function(failed)
        except OSError:
            pass

    shutil.rmtree(path, onerror=_on_error)


def _has_foreign_entries(workspace: str | None) -> bool:
    """Whether this (non-root) user may be unable to remove `workspace`: an entry in it belongs
    to another uid (the container's users), or a directory cannot be read."""
    if not workspace or os.geteuid() == 0 or not os.path.isdir(workspace):
        return False
    uid = os.geteuid()
    unreadable: list[OSError] = []
    for top, dirs, files in os.walk(workspace, onerror=unreadable.append):
        for name in dirs + files:
            try:
                if os.lstat(os.path.join(top, name)).st_uid != uid:
                    return True
            except OSError:
                return True
    return bool(unreadable)


class AgentcSandboxSession(BaseSandboxSession):
    """One agentc sandbox driven through the server's session methods."""

    state: AgentcSandboxSessionState

    def __init__(
        self,
        *,
        server: AgentcServer,
        state: AgentcSandboxSessionState,
        findings: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._server = server
        self.state = state
        self.findings: list[dict[str, Any]] = [dict(f) for f in findings]
        self._inline_helpers: dict[str, str] = {}
        # True while the sandbox is known to run (just launched, attached running, started):
        # `start()` then asks the server nothing. After `shutdown()` (which stops it) and for a
        # resumed sandbox found stopped, `start()` asks and starts it again.
        self._known_running = False
        # Set by the client's `delete`: `shutdown()` then leaves the stop to the delete.
        self._deleting = False

    @property
    def server(self) -> AgentcServer:
        return self._server

    @property
    def sandbox(self) -> str:
        """The sandbox's container name."""
        return self.state.sandbox

    @property
    def workspace_dir(self) -> str | None:
        """The host directory bound at the manifest's root."""
        return self.state.workspace_dir

    # -- exec ------------------------------------------------------------------------------

    async def _ensure_runtime_helper_installed(self, helper: Any) -> Any:
        # The SDK installs helper scripts under /tmp and executes them; an agentc sandbox's /tmp
        # is noexec, so the script runs inline (`sh -c CONTENT NAME ARGS...`) instead.
        self._inline_helpers[str(helper.install_path)] = helper.content
        return helper.install_path

    def _inline(self, argv: list[str]) -> list[str]:
        if argv:
            content = self._inline_helpers.get(argv[0])
            if content is not None:
                return ["sh", "-c", content, argv[0], *argv[1:]]
        return argv

    async def exec(
        self,
        *command: str | Path,
        timeout: float | None = None,
        shell: bool | list[str] = True,
        user: str | User | None = None,
    ) -> ExecResult:
        if user is None:
            return await super().exec(*command, timeout=timeout, shell=shell, user=None)
        # The server runs the command as `user` itself (the base class would prefix `sudo -u`,
        # which a hardened sandbox has no use for).
        prepared = self._prepare_exec_command(*command, shell=shell, user=None)
        return await self._exec_as(prepared, timeout=timeout, user=_user_name(user))

    async def _exec_internal(
        self, *command: str | Path, timeout: float | None = None
    ) -> ExecResult:
        return await self._exec_as(command, timeout=timeout, user=None)

    async def _exec_as(
        self,
        command: Sequence[str | Path],
        *,
        timeout: float | None,
        user: str | None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        argv = self._inline([str(part) for part in command])
        request = self._server.exec(
            self.state.sandbox,
            argv,
            cwd=self.state.manifest.root,
            user=user,
            timeout=timeout,
            stdin=stdin,
        )
        try:
            if timeout is not None:
                result = await asyncio.wait_for(request, timeout + _EXEC_TIMEOUT_GRACE_S)
            else:
                result = await request
        except asyncio.TimeoutError as error:
            raise ExecTimeoutError(
                command=command, timeout_s=timeout, context={"backend": "agentc"}, cause=error
            ) from error
        except AgentcError as error:
            raise ExecTransportError(
                command=command,
                context={
                    "backend": "agentc",
                    "sandbox": self.state.sandbox,
                    "kind": error.kind,
                    "exit_code": error.exit_code,
                    "hint": error.hint,
                },
                cause=error,
                message=str(error),
            ) from error
        if result.get("timed_out"):
            raise ExecTimeoutError(
                command=command,
                timeout_s=timeout,
                context={
                    "backend": "agentc",
                    "stdout": result["stdout"].decode("utf-8", errors="replace"),
                    "stderr": result["stderr"].decode("utf-8", errors="replace"),
                },
            )
        exit_code = result.get("exit_code")
        if not isinstance(exit_code, int):
            raise ExecTransportError(
                command=command,
                context={"backend": "agentc", "reason": "missing_exit_code"},
            )
        return ExecResult(stdout=result["stdout"], stderr=result["stderr"], exit_code=exit_code)

    async def _exec_checked_nonzero(self, *command: str | Path) -> ExecResult:
        # The SDK provisions a manifest's users and groups (an agent's `run_as` among them) with
        # groupadd/useradd/usermod, which a read-only /etc without capabilities refuses. An
        # account the image already has is taken as provisioned; only a missing one goes on to
        # the command (and fails, with its message).
        argv = [str(part) for part in command]
        if argv and argv[0] in ("groupadd", "useradd", "usermod") and len(argv) > 1:
            if await self._account_present(argv):
                return ExecResult(stdout=b"", stderr=b"", exit_code=0)
        return await super()._exec_checked_nonzero(*command)

    async def _account_present(self, argv: list[str]) -> bool:
        name = argv[-1]
        if argv[0] == "groupadd":
            probe = ["sh", "-c", 'grep -q "^$1:" /etc/group', "sh", name]
        elif argv[0] == "useradd":
            probe = ["id", "-u", "--", name]
        else:  # usermod -aG GROUP USER
            group = argv[-2]
            probe = ["sh", "-c", 'id -nG -- "$1" | tr " " "\\n" | grep -qx -- "$2"', "sh", name, group]
        try:
            result = await self._exec_as(probe, timeout=30, user=None)
        except Exception:
            return False
        return result.ok()

    # -- files -----------------------------------------------------------------------------

    async def _validate_path_access(self, path: Path | str, *, for_write: bool = False) -> Path:
        # The SDK's own checks first (under the workspace root or an extra path grant, no `..`
        # out, read-only grants), then, as the Docker backend, that the path resolves inside,
        # symlinks included. The workspace is a host directory, so that is checked here without
        # a round trip; where the host cannot tell (a path outside the root, a link leading out
        # of it, a directory this user cannot read), the SDK's check runs in the sandbox.
        policy = self._workspace_path_policy()
        workspace_path = policy.normalize_sandbox_path(path, for_write=for_write)
        if _resolves_inside(workspace_path, policy.sandbox_root(), self.state.workspace_dir):
            return posix_path_as_path(workspace_path)
        return await self._validate_remote_path_access(path, for_write=for_write)

    async def read(self, path: Path, *, user: str | User | None = None) -> io.IOBase:
        workspace_path = await self._validate_path_access(path)
        try:
            data = await self._server.read_file(
                self.state.sandbox, sandbox_path_str(workspace_path), user=_user_name(user)
            )
        except AgentcNotFoundError as error:
            raise WorkspaceReadNotFoundError(path=Path(path), cause=error) from error
        except AgentcError as error:
            raise WorkspaceArchiveReadError(
                path=Path(path), context={"backend": "agentc", "kind": error.kind}, cause=error
            ) from error
        return io.BytesIO(data)

    async def write(
        self,
        path: Path,
        data: io.IOBase,
        *,
        user: str | User | None = None,
    ) -> None:
        payload = coerce_write_payload(path=path, data=data)
        workspace_path = await self._validate_path_access(path, for_write=True)
        content = _read_all(payload.stream)
        # One request: write_file makes the parent directories, keeps an existing file's mode
        # (an edited script stays executable) and gives a new one 0o644.
        try:
            await self._server.write_file(
                self.state.sandbox,
                sandbox_path_str(workspace_path),
                content,
                user=_user_name(user),
            )
        except AgentcError as error:
            raise WorkspaceArchiveWriteError(
                path=workspace_path,
                context={"backend": "agentc", "kind": error.kind},
                cause=error,
            ) from error

    async def _write_new_file(
        self,
        path: Path,
        data: io.IOBase,
        *,
        user: str | User | None = None,
    ) -> None:
        # apply_patch's creation of a file (openai-agents >= 0.24): the SDK's default makes the
        # parent with a mkdir exec first, which write_file does itself.
        await self.write(self.normalize_path(path), data, user=user)

    async def running(self) -> bool:
        try:
            result = await self._server.request("running", {"sandbox": self.state.sandbox})
        except AgentcError:
            return False
        return bool((result or {}).get("running"))

    # -- lifecycle -------------------------------------------------------------------------

    async def _ensure_backend_started(self) -> None:
        # As the Docker backend: a stopped sandbox (a session shut down, a resumed sandbox found
        # stopped) is started again, its container and workspace as they were.
        if self._known_running:
            return
        try:
            result = await self._server.request("running", {"sandbox": self.state.sandbox})
            if not (result or {}).get("running"):
                await self._server.request("start", {"sandbox": self.state.sandbox})
        except AgentcError as error:
            raise ExecTransportError(
                command=("start", self.state.sandbox),
                context={
                    "backend": "agentc",
                    "sandbox": self.state.sandbox,
                    "kind": error.kind,
                    "hint": error.hint,
                },
                cause=error,
                message=str(error),
            ) from error
        self._known_running = True

    async def _shutdown_backend(self) -> None:
        # As the Docker backend: the sandbox is stopped and kept (`start()` or a `resume` starts
        # it again; `client.delete()` removes it). Best effort. The stop is the engine's (SIGTERM,
        # then SIGKILL after 10 s). Not when the client deletes the session: it removes the
        # sandbox straight away.
        self._known_running = False
        if self._deleting or not self.state.sandbox or not self._server.alive:
            return
        try:
            await self._server.request("stop", {"sandbox": self.state.sandbox})
        except AgentcError as error:
            logger.debug("stopping agentc sandbox %s: %s", self.state.sandbox, error)

    async def persist_workspace(self) -> io.IOBase:
        root = self._workspace_root_path()
        try:
            data = await self._server.read_tar(self.state.sandbox, root.as_posix())
        except AgentcError as error:
            raise WorkspaceArchiveReadError(
                path=root, context={"backend": "agentc", "kind": error.kind}, cause=error
            ) from error
        try:
            archive = portable_workspace_tar(
                data, root=root.as_posix(), skip=self._persist_workspace_skip_relpaths()
            )
        except (tarfile.TarError, OSError) as error:
            raise WorkspaceArchiveReadError(path=root, cause=error) from error
        return io.BytesIO(archive)

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        root = self._workspace_root_path()
        raw = _read_all(data)
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
                validate_tarfile(tar, allow_external_symlink_targets=False)
        except UnsafeTarMemberError as error:
            raise WorkspaceArchiveWriteError(
                path=root, context={"reason": error.reason, "member": error.member}, cause=error
            ) from error
        except (tarfile.TarError, OSError) as error:
            raise WorkspaceArchiveWriteError(path=root, cause=error) from error
        try:
            await self._server.write_tar(self.state.sandbox, root.as_posix(), raw)
        except AgentcError as error:
            raise WorkspaceArchiveWriteError(
                path=root, context={"backend": "agentc", "kind": error.kind}, cause=error
            ) from error

    # -- ports -----------------------------------------------------------------------------

    async def _resolve_exposed_port(self, port: int) -> ExposedPortEndpoint:
        try:
            result = await self._server.request(
                "endpoint", {"sandbox": self.state.sandbox, "port": port}
            )
        except AgentcError as error:
            raise ExposedPortUnavailableError(
                port=port,
                exposed_ports=self.state.exposed_ports,
                reason="backend_unavailable",
                context={"backend": "agentc", "detail": error.kind or "endpoint_failed"},
                cause=error,
            ) from error
        host = str(result.get("host") or "127.0.0.1")
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return ExposedPortEndpoint(host=host, port=int(result["port"]), tls=False)


class AgentcSandboxClient(BaseSandboxClient[AgentcSandboxClientOptions]):
    """Sandboxes launched by agentc, for the openai-agents SDK.

    One `agentc serve --stdio` process serves the client's sessions (one per backend and engine
    pair asked for), started on first use in the running event loop. `aclose()` (or
    ``async with``) ends it: the server then deletes every sandbox not created with ``keep``, and
    the client removes their workspace directories.
    """

    backend_id = "agentc"
    supports_default_options = False

    def __init__(
        self,
        *,
        binary: str | os.PathLike[str] | None = None,
        backend: Literal["api", "cli"] | None = None,
        engine: Literal["docker", "podman"] | None = None,
        instrumentation: Instrumentation | None = None,
        dependencies: Dependencies | None = None,
        verbose: bool = False,
        close_server_when_idle: bool = False,
    ) -> None:
        super().__init__()
        self.binary = binary
        self.backend = backend
        self.engine = engine
        self.verbose = verbose
        self.close_server_when_idle = close_server_when_idle
        self._instrumentation = (
            instrumentation if instrumentation is not None else Instrumentation()
        )
        self._dependencies = dependencies
        self._servers: dict[tuple[str | None, str | None], asyncio.Task[AgentcServer]] = {}
        self._sessions: dict[str, AgentcSandboxSession] = {}

    # -- the server ------------------------------------------------------------------------

    async def server(self, backend: str | None = None, engine: str | None = None) -> AgentcServer:
        """The running server for `backend` and `engine` (the client's by default), started in
        this event loop when there is none."""
        key = (backend or self.backend, engine or self.engine)
        loop = asyncio.get_running_loop()
        task = self._servers.get(key)
        if task is not None:
            if task.get_loop() is loop:
                if not task.done():
                    return await asyncio.shield(task)
                if task.exception() is None and task.result().alive:
                    return task.result()
            elif task.done() and task.exception() is None:
                # Started in another event loop: it cannot be talked to from this one. Its
                # sessions end with it (SIGTERM: it deletes those not kept).
                task.result().terminate_nowait()
            self._servers.pop(key, None)

        async def _start() -> AgentcServer:
            server = AgentcServer(self.binary, backend=key[0], engine=key[1], verbose=self.verbose)
            await server.start()
            return server

        task = loop.create_task(_start())
        self._servers[key] = task
        try:
            return await asyncio.shield(task)
        except BaseException:
            if self._servers.get(key) is task and task.done():
                self._servers.pop(key, None)
            raise

    async def aclose(self) -> None:
        """Ends the client's servers (deleting their sandboxes not kept) and removes the
        workspace directories of those sandboxes."""
        tasks = list(self._servers.items())
        self._servers.clear()
        loop = asyncio.get_running_loop()
        for _key, task in tasks:
            if task.get_loop() is not loop:
                if task.done() and task.exception() is None:
                    server = task.result()
                    server.terminate_nowait()
                    await server.wait_gone()
                continue
            try:
                server = await task
            except BaseException:
                continue
            await server.close()
        for name, session in list(self._sessions.items()):
            if not session.state.keep:
                self._remove_workspace(session.state)
                self._sessions.pop(name, None)

    async def __aenter__(self) -> AgentcSandboxClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- workspace directories -------------------------------------------------------------

    @staticmethod
    def _make_workspace() -> str:
        parent = tempfile.mkdtemp(prefix="agentc-sandbox-")  # 0700, this user's
        workspace = os.path.join(parent, "workspace")
        os.mkdir(workspace)
        # Any user the profile runs as may write it; the 0700 parent keeps other host users out.
        os.chmod(workspace, 0o777)
        return workspace

    @staticmethod
    def _remove_workspace(state: AgentcSandboxSessionState) -> None:
        if not state.workspace_owned or not state.workspace_dir:
            return
        workspace = os.path.abspath(state.workspace_dir)
        parent = os.path.dirname(workspace)
        # Only ever a directory of the shape this client makes (a state payload names the path).
        if os.path.basename(workspace) != "workspace" or not os.path.basename(parent).startswith(
            "agentc-sandbox-"
        ):
            logger.warning("not removing %s: not a workspace agentc_sandbox made", workspace)
            return
        if os.path.exists(parent):
            _remove_tree(parent)

    # -- sessions --------------------------------------------------------------------------

    @staticmethod
    async def _session_env(manifest: Manifest, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(extra)
        env.update(await manifest.environment.resolve())
        return env

    async def _launch(
        self, server: AgentcServer, state: AgentcSandboxSessionState
    ) -> dict[str, Any]:
        """`create` for `state`: its profile, its workspace bound at the manifest's root."""
        root = state.manifest.root
        if PurePosixPath(root) == PurePosixPath("/"):
            raise ValueError("an agentc sandbox cannot bind its workspace at / (Manifest.root)")
        params = _profile_params(
            state.profile,
            profile_text=state.profile_text,
            profile_dir=state.profile_dir,
            image=state.image,
        )
        if state.image:
            params["image"] = state.image
        # A name of its own for every launch: several sessions of one profile run side by side.
        params["name"] = state.name or f"agentc-sdk-{uuid.uuid4().hex[:12]}"
        mounts = [{"source": state.workspace_dir, "target": root, "read_only": False}]
        mounts += [mount.to_param() for mount in state.mounts]
        params["mounts"] = mounts
        if state.exposed_ports:
            # A port the profile publishes already counts once.
            params["publish"] = list(state.exposed_ports)
        env = await self._session_env(state.manifest, state.env)
        if env:
            params["env"] = env
        params["keep"] = state.keep
        result = await server.request("create", params)
        sandbox = result["sandbox"]
        state.sandbox = sandbox["name"]
        state.sandbox_id = sandbox.get("id", "")
        for finding in result.get("findings") or []:
            logger.debug(
                "agentc sandbox %s: %s %s: %s",
                state.sandbox,
                finding.get("severity"),
                finding.get("code"),
                finding.get("message"),
            )
        return result

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: AgentcSandboxClientOptions,
    ) -> SandboxSession:
        if isinstance(options, Mapping):
            options = AgentcSandboxClientOptions.model_validate(dict(options))
        if not isinstance(options, AgentcSandboxClientOptions):
            raise TypeError("AgentcSandboxClient.create expects AgentcSandboxClientOptions")
        manifest = manifest if manifest is not None else Manifest()
        validate = getattr(self, "_validate_manifest_for_create", None)
        if validate is not None:  # openai-agents >= 0.20
            manifest = validate(manifest)
        profile_params = _profile_params(
            options.profile,
            profile_dir=options.profile_dir,
            image=options.image,
        )
        session_id = uuid.uuid4()
        owned = options.workspace_dir is None
        workspace = (
            self._make_workspace()
            if owned
            else str(Path(options.workspace_dir).expanduser().resolve())  # type: ignore[arg-type]
        )
        state = AgentcSandboxSessionState(
            session_id=session_id,
            manifest=manifest,
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            exposed_ports=options.exposed_ports,
            sandbox="",
            profile=profile_params.get("profile"),
            profile_text=profile_params.get("profile_text"),
            profile_dir=profile_params.get("profile_dir"),
            image=options.image,
            backend=options.backend or self.backend,
            engine=options.engine or self.engine,
            keep=options.keep,
            name=options.name,
            env=dict(options.env),
            mounts=options.mounts,
            workspace_dir=workspace,
            workspace_owned=owned,
        )
        try:
            server = await self.server(state.backend, state.engine)
            result = await self._launch(server, state)
        except BaseException:
            self._remove_workspace(state)
            raise
        inner = AgentcSandboxSession(
            server=server, state=state, findings=result.get("findings") or ()
        )
        inner._known_running = True
        self._sessions[state.sandbox] = inner
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        inner = getattr(session, "_inner", session)
        if not isinstance(inner, AgentcSandboxSession):
            raise TypeError("AgentcSandboxClient.delete expects a session of AgentcSandboxClient")
        state = inner.state
        cleanup_error: BaseException | None = None
        # The sandbox is removed below: the session's shutdown need not stop it first.
        inner._deleting = True
        try:
            await inner.shutdown()
        except Exception as error:
            cleanup_error = error
        server = inner.server
        if state.sandbox:
            if server.alive and state.workspace_owned and _has_foreign_entries(state.workspace_dir):
                # Files the container made under other uids: let this (non-root) user remove
                # them, through the sandbox (started again if a shutdown stopped it).
                try:
                    if not await inner.running():
                        await server.request("start", {"sandbox": state.sandbox})
                    await inner.exec(
                        "chmod", "-R", "a+rwX", state.manifest.root, shell=False, timeout=60
                    )
                except Exception:
                    pass
            try:
                if not server.alive:
                    server = await self.server(state.backend, state.engine)
                    await server.request("attach", {"sandbox": state.sandbox, "keep": True})
                result = await server.request("delete", {"sandbox": state.sandbox})
                for left in (result or {}).get("left") or []:
                    logger.warning("agentc sandbox %s: left %s", state.sandbox, left)
            except AgentcNotFoundError:
                pass
            except AgentcError as error:
                if cleanup_error is None:
                    cleanup_error = error
        self._sessions.pop(state.sandbox, None)
        try:
            self._remove_workspace(state)
        except OSError as error:
            if cleanup_error is None:
                cleanup_error = error
        if self.close_server_when_idle and not any(
            s.server is server for s in self._sessions.values()
        ):
            await server.close()
        if cleanup_error is not None:
            raise cleanup_error
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        if not isinstance(state, AgentcSandboxSessionState):
            raise TypeError("AgentcSandboxClient.resume expects an AgentcSandboxSessionState")
        state.assert_path_grants_rebound()
        server = await self.server(state.backend, state.engine)
        env = await self._session_env(state.manifest, state.env)
        reused = False
        running = False
        if state.sandbox:
            try:
                attached = await server.request(
                    "attach", {"sandbox": state.sandbox, "keep": state.keep, "env": env}
                )
            except AgentcServerExited:
                raise
            except AgentcError as error:
                logger.info(
                    "agentc sandbox %s cannot be attached (%s): launching a new one",
                    state.sandbox,
                    error,
                )
            else:
                running = bool(attached.get("running"))
                if running or (state.workspace_dir and os.path.isdir(state.workspace_dir)):
                    # As the Docker backend: the sandbox is reused, a stopped one started again
                    # by the session's `start()`.
                    reused = True
                else:
                    # Stopped, and the host directory bound as its workspace is gone: it could
                    # not start again. Replaced by a new one.
                    try:
                        await server.request("delete", {"sandbox": state.sandbox})
                    except AgentcError as error:
                        logger.warning("deleting stopped sandbox %s: %s", state.sandbox, error)
        workspace_preserved = True
        if not reused:
            if not state.workspace_dir or not os.path.isdir(state.workspace_dir):
                state.workspace_dir = self._make_workspace()
                state.workspace_owned = True
                state.workspace_root_ready = False
                workspace_preserved = False
            state.sandbox = ""
            try:
                await self._launch(server, state)
            except BaseException:
                if not workspace_preserved:
                    self._remove_workspace(state)
                raise
        inner = AgentcSandboxSession(server=server, state=state)
        inner._known_running = running or not reused
        inner._set_start_state_preserved(workspace_preserved, system=reused)
        self._sessions[state.sandbox] = inner
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, AgentcSandboxSessionState)


__all__ = [
    "AgentcSandboxClient",
    "AgentcSandboxClientOptions",
    "AgentcSandboxSession",
    "AgentcSandboxSessionState",
    "HostMount",
    "default_profile_text",
    "portable_workspace_tar",
]
