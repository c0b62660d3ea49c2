"""AgentcSandboxClient through the SDK's public sandbox types, against the real server."""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from agents.sandbox import Manifest
from agents.sandbox.entries import Dir, File
from agents.sandbox.errors import (
    ExecTimeoutError,
    InvalidManifestPathError,
    WorkspaceReadNotFoundError,
)

from agentc_sandbox import (
    AgentcSandboxClient,
    AgentcSandboxClientOptions,
    AgentcSandboxSessionState,
)

from .conftest import (
    PROCESSES,
    fetch_page,
    live_processes,
    profile_text,
    remove_if_left,
    sandbox_names,
)

pytestmark = pytest.mark.live


def _manifest() -> Manifest:
    return Manifest(
        entries={
            "README.md": File(content=b"# hello from the manifest\n"),
            "src": Dir(
                children={
                    "main.py": File(content=b"print('main')\n"),
                    "data": Dir(children={"numbers.txt": File(content=b"1\n2\n3\n")}),
                }
            ),
        }
    )


async def _text(session, path: str) -> str:
    stream = await session.read(Path(path))
    return stream.read().decode()


async def test_create_with_manifest_exec_and_exit_codes(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=_manifest(), options=AgentcSandboxClientOptions(profile=str(profile_path))
        )
        try:
            await session.start()
            assert await session.running()
            # The manifest is materialized under its root, which is the working directory.
            assert await _text(session, "README.md") == "# hello from the manifest\n"
            assert await _text(session, "/workspace/src/data/numbers.txt") == "1\n2\n3\n"
            listing = await session.exec("find . -type f | sort")
            assert listing.ok()
            assert listing.stdout.decode().split() == [
                "./README.md",
                "./src/data/numbers.txt",
                "./src/main.py",
            ]
            entries = {Path(e.path).name for e in await session.ls("src")}
            assert {"main.py", "data"} <= entries

            ok = await session.exec("echo out; echo err >&2")
            assert (ok.exit_code, ok.stdout, ok.stderr) == (0, b"out\n", b"err\n")
            failed = await session.exec("exit 7")
            assert failed.exit_code == 7 and not failed.ok()
            argv = await session.exec("printf", "%s|", "a b", "c", shell=False)
            assert argv.stdout == b"a b|c|"
            missing = await session.exec("no-such-program", shell=False)
            assert missing.exit_code in (126, 127)
            whoami = await session.exec("id -u")
            assert whoami.stdout.strip() == b"1000"
            as_nobody = await session.exec("id -u", user="nobody")
            assert as_nobody.stdout.strip() == b"65534"
            with pytest.raises(ExecTimeoutError):
                await session.exec("sleep 30", timeout=1)
        finally:
            await client.delete(session)


async def test_write_then_read(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
        try:
            await session.start()
            payload = bytes(range(256)) * 64
            await session.write(Path("deep/dir/blob.bin"), io.BytesIO(payload))
            assert (await session.read(Path("deep/dir/blob.bin"))).read() == payload
            size = await session.exec("wc -c < /workspace/deep/dir/blob.bin")
            assert size.stdout.strip() == str(len(payload)).encode()
            owner = await session.exec("stat -c %u /workspace/deep/dir/blob.bin")
            assert owner.stdout.strip() == b"1000"
            # Overwrite: an executable stays executable; then read as another user.
            assert (await session.exec("chmod 750 deep/dir/blob.bin")).ok()
            await session.write(Path("deep/dir/blob.bin"), io.BytesIO(b"short"))
            mode = await session.exec("stat -c %a deep/dir/blob.bin")
            assert mode.stdout.strip() == b"750"
            assert (await session.exec("chmod 644 deep/dir/blob.bin")).ok()
            assert (await session.read(Path("deep/dir/blob.bin"), user="nobody")).read() == b"short"
            # Written as another user: the file is that user's.
            await session.write(Path("by-root.txt"), io.BytesIO(b"root's"), user="root")
            owner = await session.exec("stat -c %u by-root.txt")
            assert owner.stdout.strip() == b"0"
            with pytest.raises(WorkspaceReadNotFoundError):
                await session.read(Path("nope.txt"))
            # Paths outside the workspace are refused by the SDK's policy.
            with pytest.raises(InvalidManifestPathError):
                await session.read(Path("/etc/passwd"))
        finally:
            await client.delete(session)


async def test_persist_then_hydrate_into_a_new_session(live, profile_path):
    async with AgentcSandboxClient() as client:
        options = AgentcSandboxClientOptions(profile=str(profile_path))
        first = await client.create(manifest=_manifest(), options=options)
        second = await client.create(options=options)
        try:
            await first.start()
            await first.exec(
                "mkdir -p made && echo made-at-runtime > made/file.txt && ln -s README.md link"
            )
            archive = await first.persist_workspace()
            data = archive.read()
            names = sorted(m.name for m in tarfile.open(fileobj=io.BytesIO(data)))
            assert "README.md" in names and "made/file.txt" in names
            assert all(not n.startswith(("/", "./", "workspace")) for n in names)

            await second.start()
            await second.hydrate_workspace(io.BytesIO(data))
            assert await _text(second, "made/file.txt") == "made-at-runtime\n"
            assert await _text(second, "src/data/numbers.txt") == "1\n2\n3\n"
            link = await second.exec("readlink link")
            assert link.stdout.strip() == b"README.md"
        finally:
            await client.delete(first)
            await client.delete(second)


async def test_exposed_port_reached_from_the_host(live, profile_path):
    port = 8080
    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=Manifest(
                entries={"www": Dir(children={"index.html": File(content=b"served by busybox\n")})}
            ),
            options=AgentcSandboxClientOptions(profile=str(profile_path), exposed_ports=(port,)),
        )
        try:
            await session.start()
            started = await session.exec(f"httpd -p {port} -h /workspace/www")
            assert started.ok(), started.stderr
            endpoint = await session.resolve_exposed_port(port)
            # Only ever connect to the endpoint the session resolved, and only on loopback.
            assert endpoint.host == "127.0.0.1", endpoint
            body = await fetch_page(endpoint)
            assert body == b"served by busybox\n"
        finally:
            await client.delete(session)


async def test_a_port_the_profile_publishes_too_is_published_once(live):
    text = profile_text(live["image"], name="sdk-publish") + "\n[network]\npublish = [8080]\n"
    async with AgentcSandboxClient() as client:
        session = await client.create(
            options=AgentcSandboxClientOptions(profile=text, exposed_ports=(8080,))
        )
        try:
            await session.start()
            endpoint = await session.resolve_exposed_port(8080)
            assert endpoint.host == "127.0.0.1" and endpoint.port > 0
        finally:
            await client.delete(session)


async def test_resume_from_serialized_state_reattaches(live, profile_path):
    first_client = AgentcSandboxClient()
    session = await first_client.create(
        manifest=_manifest(),
        options=AgentcSandboxClientOptions(profile=str(profile_path), keep=True),
    )
    name = session.state.sandbox
    try:
        await session.start()
        await session.write(Path("progress.txt"), io.BytesIO(b"step 1 done\n"))
        payload = json.loads(json.dumps(first_client.serialize_session_state(session.state)))
        assert payload["type"] == "agentc" and payload["sandbox"] == name
        # This process's server ends; the kept sandbox and its workspace stay.
        await first_client.aclose()
        assert name in sandbox_names(live["bin"])

        second_client = AgentcSandboxClient()
        try:
            state = second_client.deserialize_session_state(payload)
            assert isinstance(state, AgentcSandboxSessionState)
            resumed = await second_client.resume(state)
            await resumed.start()
            assert resumed.state.sandbox == name
            assert await _text(resumed, "progress.txt") == "step 1 done\n"
            assert await _text(resumed, "README.md") == "# hello from the manifest\n"
            await second_client.delete(resumed)
        finally:
            await second_client.aclose()
    finally:
        await remove_if_left(live["bin"], name)
    assert name not in sandbox_names(live["bin"])
    assert not os.path.exists(session.state.workspace_dir)


async def test_resume_after_the_sandbox_is_gone_launches_a_new_one(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=_manifest(), options=AgentcSandboxClientOptions(profile=str(profile_path))
        )
        await session.start()
        await session.write(Path("kept.txt"), io.BytesIO(b"in the host workspace\n"))
        payload = client.serialize_session_state(session.state)
        old_name = session.state.sandbox
        server = await client.server()
        await server.request("delete", {"sandbox": old_name})

        state = client.deserialize_session_state(json.loads(json.dumps(payload)))
        resumed = await client.resume(state)
        try:
            await resumed.start()
            assert resumed.state.sandbox != old_name
            assert await resumed.running()
            # The workspace is a host directory: it outlived the sandbox.
            assert await _text(resumed, "kept.txt") == "in the host workspace\n"
        finally:
            await client.delete(resumed)
        assert old_name not in sandbox_names(live["bin"])


async def test_delete_leaves_nothing(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=_manifest(),
            options=AgentcSandboxClientOptions(profile=str(profile_path), exposed_ports=(8080,)),
        )
        await session.start()
        await session.exec("echo x > owned-by-1000.txt; mkdir -p d/e; chmod 500 d")
        name = session.state.sandbox
        workspace = session.state.workspace_dir
        assert name in sandbox_names(live["bin"])
        assert os.path.isdir(workspace)
        await client.delete(session)
        assert name not in sandbox_names(live["bin"])
        assert not os.path.exists(os.path.dirname(workspace))
        assert not await session.running()


async def test_client_close_deletes_sandboxes_not_kept(live, profile_path):
    client = AgentcSandboxClient()
    session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
    name = session.state.sandbox
    workspace = session.state.workspace_dir
    assert name in sandbox_names(live["bin"])
    await client.aclose()
    assert name not in sandbox_names(live["bin"])
    assert not os.path.exists(workspace)


async def test_hardening_seen_from_inside(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
        try:
            await session.start()
            status = (await session.exec("cat /proc/self/status")).stdout.decode()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            assert fields["CapEff"].strip() == "0000000000000000"
            assert fields["CapPrm"].strip() == "0000000000000000"
            assert fields["NoNewPrivs"].strip() == "1"
            root_write = await session.exec("touch /agentc-was-here")
            assert root_write.exit_code != 0
            assert b"Read-only file system" in root_write.stderr
            # The workspace and /tmp are the writable places.
            assert (await session.exec("touch /workspace/ok /tmp/ok")).ok()
            mounts = (await session.exec("cat /proc/mounts")).stdout.decode()
            root_line = next(l for l in mounts.splitlines() if l.split()[1] == "/")
            assert "ro" in root_line.split()[3].split(",")
        finally:
            await client.delete(session)


async def test_the_sdks_docker_client_shows_none_of_it(live):
    """The same probe through the SDK's own DockerSandboxClient on the same image: full default
    capabilities, privileges can be gained, a writable root (what agentc's sandbox refuses)."""
    import docker
    from agents.sandbox.sandboxes.docker import DockerSandboxClient, DockerSandboxClientOptions

    engine = docker.from_env()
    client = DockerSandboxClient(engine)
    session = await client.create(options=DockerSandboxClientOptions(image=live["image"]))
    try:
        await session.start()
        status = (await session.exec("cat /proc/self/status")).stdout.decode()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        assert fields["CapEff"].strip() != "0000000000000000"
        assert fields["NoNewPrivs"].strip() == "0"
        assert (await session.exec("touch /sdk-was-here")).ok()
    finally:
        await client.delete(session)
        engine.close()


async def test_profile_as_toml_text_and_default_profile(live):
    async with AgentcSandboxClient() as client:
        from_text = await client.create(
            options=AgentcSandboxClientOptions(profile=profile_text(live["image"], name="sdk-text"))
        )
        from_image = await client.create(options=AgentcSandboxClientOptions(image=live["image"]))
        try:
            for session in (from_text, from_image):
                await session.start()
                result = await session.exec("echo ok")
                assert result.stdout == b"ok\n"
        finally:
            await client.delete(from_text)
            await client.delete(from_image)


async def test_manifest_environment_reaches_every_exec(live, profile_path):
    from agents.sandbox.manifest import Environment

    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=Manifest(environment=Environment(value={"GREETING": "hello there"})),
            options=AgentcSandboxClientOptions(profile=str(profile_path), env={"EXTRA": "1"}),
        )
        try:
            await session.start()
            result = await session.exec('echo "$GREETING/$EXTRA"')
            assert result.stdout == b"hello there/1\n"
        finally:
            await client.delete(session)


async def test_overlapping_operations_on_one_session(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
        try:
            await session.start()

            finished: list[str] = []

            async def roundtrip(i: int) -> None:
                await session.write(Path(f"par/{i}.txt"), io.BytesIO(f"file {i}\n".encode()))
                result = await session.exec(f"cat par/{i}.txt")
                assert result.stdout == f"file {i}\n".encode()
                finished.append(f"quick {i}")

            async def slow() -> None:
                assert (await session.exec("sleep 4; echo slow")).stdout == b"slow\n"
                finished.append("slow")

            await asyncio.gather(slow(), *(roundtrip(i) for i in range(6)))
            # The quick ones were not held up behind the slow one.
            assert finished[-1] == "slow" and len(finished) == 7
        finally:
            await client.delete(session)


async def test_manifest_users_the_image_has_and_run_as(live, profile_path):
    from agents.sandbox.types import Group, User

    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=Manifest(
                users=[User(name="claude")],
                groups=[Group(name="claude", users=[User(name="codex")])],
            ),
            options=AgentcSandboxClientOptions(profile=str(profile_path)),
        )
        try:
            # useradd/groupadd cannot run under the hardening; accounts the image has are kept.
            await session.start()
            as_claude = await session.exec("id -un", user=User(name="claude"))
            assert as_claude.stdout.strip() in (b"claude", b"opencode", b"codex")
            await session.write(Path("mine.txt"), io.BytesIO(b"x"), user="nobody")
            assert (await session.exec("stat -c %u mine.txt")).stdout.strip() == b"65534"
        finally:
            await client.delete(session)

        missing = await client.create(
            manifest=Manifest(users=[User(name="no-such-user")]),
            options=AgentcSandboxClientOptions(profile=str(profile_path)),
        )
        try:
            with pytest.raises(Exception, match="useradd"):
                await missing.start()
        finally:
            await client.delete(missing)


def _counting(server) -> list[str]:
    """Records the method of every request `server` is sent from now on."""
    sent: list[str] = []
    original = server.request

    async def request(method, params=None, **kwargs):
        sent.append(method)
        return await original(method, params, **kwargs)

    server.request = request
    return sent


async def test_a_read_or_write_is_one_request(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
        try:
            await session.start()
            assert (await session.exec("ln -s new/dir inside && ln -s /etc outside")).ok()
            sent = _counting(await client.server())
            # No path check, stat or mkdir in the sandbox: write_file makes the parents.
            await session.write(Path("new/dir/file.txt"), io.BytesIO(b"one"))
            assert (await session.read(Path("new/dir/file.txt"))).read() == b"one"
            # A symlink that stays in the workspace is followed, checked on the host.
            await session.write(Path("inside/via-link.txt"), io.BytesIO(b"two"))
            assert (await session.read(Path("new/dir/via-link.txt"))).read() == b"two"
            assert sent == ["write_file", "read_file", "write_file", "read_file"]
            mode = await session.exec("stat -c %a new/dir/file.txt")
            assert mode.stdout.strip() == b"644"
            # One that leads out is refused by the SDK's own check, run in the sandbox.
            sent.clear()
            with pytest.raises(InvalidManifestPathError):
                await session.write(Path("outside/agentc-was-here"), io.BytesIO(b"x"))
            with pytest.raises(InvalidManifestPathError):
                await session.read(Path("outside/passwd"))
            assert "write_file" not in sent and "read_file" not in sent
        finally:
            await client.delete(session)


async def test_a_cancelled_exec_leaves_no_process(live, profile_path):
    async with AgentcSandboxClient() as client:
        session = await client.create(options=AgentcSandboxClientOptions(profile=str(profile_path)))
        try:
            await session.start()
            started = Path(session.state.workspace_dir, "started")
            task = asyncio.ensure_future(session.exec("touch started; sleep 300 & sleep 301"))
            # Seen on the host workspace: no exec waits behind the running one.
            for _ in range(200):
                if started.exists():
                    break
                await asyncio.sleep(0.05)
            assert started.exists()
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 60)
            status = await session.exec(*PROCESSES, shell=False)
            assert "sleep" not in live_processes(status.stdout)
            assert (await session.exec("echo still here")).stdout == b"still here\n"
        finally:
            await client.delete(session)


def _prompt_profile(tmp_path: Path, image: str) -> Path:
    """The test profile with docker's init as PID 1, which passes SIGTERM on: `tail` alone as
    PID 1 ignores it, so a stop would wait the engine's 10 s for SIGKILL."""
    path = tmp_path / "prompt.toml"
    path.write_text(profile_text(image, user="1000", name="sdk-stop") + "init = true\n")
    return path


async def test_shutdown_stops_and_start_starts_again(live, tmp_path):
    profile = _prompt_profile(tmp_path, live["image"])
    async with AgentcSandboxClient() as client:
        session = await client.create(
            manifest=_manifest(), options=AgentcSandboxClientOptions(profile=str(profile))
        )
        name = session.state.sandbox
        try:
            await session.start()
            await session.write(Path("kept.txt"), io.BytesIO(b"written before the stop\n"))
            await session.shutdown()
            # Stopped, not removed.
            assert not await session.running()
            assert name in sandbox_names(live["bin"])
            await session.start()
            assert await session.running()
            assert session.state.sandbox == name
            assert await _text(session, "kept.txt") == "written before the stop\n"
            assert (await session.exec("echo again")).stdout == b"again\n"
            # A session's aclose (stop() persists, shutdown() stops), then the client's delete.
            await session.aclose()
            assert not await session.running()
        finally:
            await client.delete(session)
        assert name not in sandbox_names(live["bin"])


async def test_resume_starts_a_stopped_sandbox_again(live, tmp_path):
    profile = _prompt_profile(tmp_path, live["image"])
    first_client = AgentcSandboxClient()
    session = await first_client.create(
        manifest=_manifest(), options=AgentcSandboxClientOptions(profile=str(profile), keep=True)
    )
    name = session.state.sandbox
    sandbox_id = session.state.sandbox_id
    try:
        await session.start()
        await session.write(Path("progress.txt"), io.BytesIO(b"step 1 done\n"))
        await session.shutdown()
        payload = json.loads(json.dumps(first_client.serialize_session_state(session.state)))
        await first_client.aclose()
        assert name in sandbox_names(live["bin"])

        second_client = AgentcSandboxClient()
        try:
            resumed = await second_client.resume(second_client.deserialize_session_state(payload))
            assert not await resumed.running()
            await resumed.start()
            # The same container, started again, not a replacement.
            assert (resumed.state.sandbox, resumed.state.sandbox_id) == (name, sandbox_id)
            assert await resumed.running()
            assert await _text(resumed, "progress.txt") == "step 1 done\n"
            assert await _text(resumed, "README.md") == "# hello from the manifest\n"
            await second_client.delete(resumed)
        finally:
            await second_client.aclose()
    finally:
        await remove_if_left(live["bin"], name)
    assert name not in sandbox_names(live["bin"])
