"""The JSON-RPC client of `agentc serve --stdio`: with a stand-in (no engine needed) and live."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

from agentc_sandbox import (
    AgentcCancelledError,
    AgentcError,
    AgentcNotFoundError,
    AgentcProtocolError,
    AgentcServer,
    AgentcServerExited,
)
from agentc_sandbox.server import find_agentc

from .conftest import PROCESSES, live_processes, sandbox_names

FAKE = Path(__file__).with_name("fake_server.py")


@pytest.fixture
def fake_bin(tmp_path: Path) -> str:
    wrapper = tmp_path / "agentc"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_find_agentc_prefers_argument_then_env(fake_bin, monkeypatch, tmp_path):
    assert find_agentc(fake_bin) == os.path.realpath(fake_bin)
    monkeypatch.setenv("AGENTC_BIN", fake_bin)
    assert find_agentc() == os.path.realpath(fake_bin)
    monkeypatch.setenv("AGENTC_BIN", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="AGENTC_BIN"):
        find_agentc()


async def test_answers_are_matched_by_id_and_notifications_by_request(fake_bin):
    async with AgentcServer(fake_bin) as server:
        assert server.info["protocol"] == 1
        order: list[str] = []

        async def echo(value: str, delay: float) -> None:
            result = await server.request("echo", {"value": value, "delay": delay})
            assert result == {"value": value}
            order.append(value)

        await asyncio.gather(echo("slow", 0.5), echo("fast", 0.0))
        assert order == ["fast", "slow"]

        chunks: list[tuple[str, bytes]] = []
        result = await server.exec("sb", ["true"], on_output=lambda s, d: chunks.append((s, d)))
        assert chunks == [("stdout", b"one\n"), ("stderr", b"two\n")]
        assert result["stdout"] == b"" and result["exit_code"] == 0
        plain = await server.exec("sb", ["true"])
        assert plain["stdout"] == b"one\n"


async def test_errors_carry_agentc_fields(fake_bin):
    async with AgentcServer(fake_bin) as server:
        with pytest.raises(AgentcNotFoundError) as caught:
            await server.request("fail", {})
        error = caught.value
        assert (error.code, error.exit_code, error.kind) == (-32000, 1, "not_found")
        assert error.hint == "`agentc ps --all` lists agentc's containers"
        assert error.method == "fail"
        with pytest.raises(AgentcProtocolError):
            await server.request("no-such-method", {})


def test_a_cancelled_request_is_its_own_error():
    error = AgentcError.from_rpc(
        {
            "code": -32800,
            "message": "the request was cancelled; the command's processes were stopped",
            "data": {"exit_code": 130, "kind": "cancelled", "hint": None},
        },
        method="exec",
    )
    assert isinstance(error, AgentcCancelledError)
    assert (error.code, error.exit_code, error.kind) == (-32800, 130, "cancelled")


async def test_a_cancelled_exec_is_cancelled_in_the_server(fake_bin):
    async with AgentcServer(fake_bin) as server:
        loop = asyncio.get_running_loop()
        # The second exec is registered for `cancel` only after 0.3 s: the first `cancel`
        # finds nothing and is asked again.
        for register_after in (0.0, 0.3):
            params = {"sandbox": "sb", "argv": ["sleep", "300"], "hang": True}
            params["register_after"] = register_after
            task = asyncio.ensure_future(server.request("exec", params))
            await asyncio.sleep(0.1)
            cancelled_at = loop.time()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The task ended once the exec answered (after its processes were stopped).
            assert loop.time() - cancelled_at >= 0.2
        asked = (await server.request("cancels", {}))["asked"]
        first, *second = asked
        assert first[1] is True
        assert [found for _, found in second][-1] is True
        assert any(not found for _, found in second)
        assert {request_id for request_id, _ in second} == {second[0][0]} != {first[0]}
        # Other requests are not cancelled in the server.
        echo = asyncio.ensure_future(server.request("echo", {"value": 1, "delay": 0.5}))
        await asyncio.sleep(0.1)
        echo.cancel()
        with pytest.raises(asyncio.CancelledError):
            await echo
        assert len((await server.request("cancels", {}))["asked"]) == len(asked)


async def test_a_server_that_dies_fails_its_requests(fake_bin):
    server = AgentcServer(fake_bin)
    await server.start()
    pending = asyncio.ensure_future(server.request("echo", {"value": 1, "delay": 5}))
    await asyncio.sleep(0.1)
    with pytest.raises(AgentcServerExited, match="status 3"):
        await server.request("die", {})
    with pytest.raises(AgentcServerExited):
        await pending
    assert "dying on request" in server.stderr_tail()
    with pytest.raises(AgentcServerExited):
        await server.request("echo", {})
    await server.close()


# -- live --------------------------------------------------------------------------------


@pytest.mark.live
async def test_live_protocol_errors(live):
    async with AgentcServer() as server:
        assert server.info["protocol"] == 1
        assert server.info["engine"] in ("docker", "podman")
        with pytest.raises(AgentcProtocolError) as caught:
            await server.request("no-such-method", {})
        assert caught.value.code == -32601
        with pytest.raises(AgentcProtocolError) as caught:
            await server.request("exec", {"sandbox": "x", "argv": ["true"], "bogus": 1})
        assert caught.value.code == -32602
        with pytest.raises(AgentcNotFoundError) as caught:
            await server.request(
                "exec", {"sandbox": "agentc-sdk-no-such-sandbox", "argv": ["true"]}
            )
        assert caught.value.kind == "not_found" and caught.value.exit_code == 1
        assert caught.value.hint


@pytest.mark.live
async def test_live_streaming_overlap_and_shutdown(live, profile_path):
    server = AgentcServer()
    await server.start()
    created = await server.request(
        "create", {"profile": str(profile_path), "name": f"agentc-sdk-rpc-{os.getpid()}"}
    )
    name = created["sandbox"]["name"]
    assert name in sandbox_names(live["bin"])
    chunks: list[tuple[str, bytes]] = []
    streamed, quick = await asyncio.gather(
        server.exec(
            name,
            ["sh", "-c", "echo a; sleep 1; echo b >&2; exit 5"],
            on_output=lambda s, d: chunks.append((s, d)),
        ),
        server.exec(name, ["echo", "quick"]),
    )
    assert quick["stdout"] == b"quick\n"
    assert streamed["exit_code"] == 5
    assert b"".join(d for s, d in chunks if s == "stdout") == b"a\n"
    assert b"".join(d for s, d in chunks if s == "stderr") == b"b\n"
    timed = await server.exec(name, ["sleep", "30"], timeout=1)
    assert timed["timed_out"] is True and timed["exit_code"] is None
    result = await server.close()
    assert result == {"deleted": [name]}
    assert server.returncode == 0
    assert name not in sandbox_names(live["bin"])


@pytest.mark.live
async def test_live_cancel_stops_the_exec_and_its_processes(live, profile_path):
    async with AgentcServer() as server:
        created = await server.request(
            "create", {"profile": str(profile_path), "name": f"agentc-sdk-cancel-{os.getpid()}"}
        )
        name = created["sandbox"]["name"]

        async def sleeping() -> list[str]:
            status = await server.exec(name, PROCESSES)
            return [n for n in live_processes(status["stdout"]) if n == "sleep"]

        # Streamed (a plain exec), then not (run by the session's runner).
        for streamed in (True, False):
            chunks: list[bytes] = []
            task = asyncio.ensure_future(
                server.exec(
                    name,
                    ["sh", "-c", "echo started > /tmp/started; sleep 300 & sleep 301"],
                    on_output=(lambda _s, data: chunks.append(data)) if streamed else None,
                )
            )
            if streamed:
                for _ in range(200):
                    if (await server.exec(name, ["test", "-e", "/tmp/started"]))["exit_code"] == 0:
                        break
                    await asyncio.sleep(0.05)
                assert len(await sleeping()) == 2
            else:
                # The runner runs the session's plain execs one at a time: nothing can look
                # inside while this one runs.
                await asyncio.sleep(1)
                assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 60)
            # Its processes are gone, the one in the background too.
            assert await sleeping() == [], streamed
            assert (await server.exec(name, ["rm", "/tmp/started"]))["exit_code"] == 0
        # An exec no longer in flight is not cancelled (the server goes on).
        assert await server.request("cancel", {"id": 999999}) == {"cancelled": False}
        assert (await server.exec(name, ["echo", "after"]))["stdout"] == b"after\n"
