"""What needs no engine: options and state through the SDK's own (de)serialization, profiles,
the workspace archive."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path, PurePosixPath

import pytest
from agents.sandbox import Manifest
from agents.sandbox.entries import File
from agents.sandbox.session import SandboxSessionState
from agents.sandbox.session.sandbox_client import BaseSandboxClientOptions
from agents.sandbox.snapshot import resolve_snapshot

from agentc_sandbox import (
    AgentcSandboxClient,
    AgentcSandboxClientOptions,
    AgentcSandboxSessionState,
    HostMount,
    default_profile_text,
)
from agentc_sandbox.sandbox import _profile_params, _resolves_inside, portable_workspace_tar


def test_options_round_trip_through_the_sdk_registry():
    options = AgentcSandboxClientOptions(
        profile="sandbox.toml",
        exposed_ports=8080,
        keep=True,
        env={"A": "1"},
        mounts=(HostMount(source="/srv/data", target="/data"),),
    )
    assert options.exposed_ports == (8080,)
    payload = json.loads(options.model_dump_json())
    assert payload["type"] == "agentc"
    parsed = BaseSandboxClientOptions.parse(payload)
    assert isinstance(parsed, AgentcSandboxClientOptions) and parsed == options
    # Positional, as the SDK's options accept: the profile first.
    assert AgentcSandboxClientOptions("p.toml").profile == "p.toml"


def test_state_round_trips_through_the_client_and_the_sdk():
    manifest = Manifest(entries={"a.txt": File(content=b"x")})
    state = AgentcSandboxSessionState(
        manifest=manifest,
        snapshot=resolve_snapshot(None, "s"),
        sandbox="agentc-sdk-0123456789ab",
        sandbox_id="f" * 64,
        profile="/etc/agentc/sandbox.toml",
        exposed_ports=(8080,),
        keep=True,
        workspace_dir="/tmp/agentc-sandbox-x/workspace",
    )
    client = AgentcSandboxClient()
    payload = json.loads(json.dumps(client.serialize_session_state(state)))
    assert payload["type"] == "agentc"
    back = client.deserialize_session_state(payload)
    assert isinstance(back, AgentcSandboxSessionState)
    assert (back.sandbox, back.keep, back.exposed_ports) == (state.sandbox, True, (8080,))
    assert back.manifest.entries.keys() == manifest.entries.keys()
    assert isinstance(
        SandboxSessionState.parse(json.loads(json.dumps(payload))), AgentcSandboxSessionState
    )


def test_profile_params(tmp_path: Path):
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n')
    assert _profile_params(str(path), profile_dir=None, image=None) == {"profile": str(path)}
    text = _profile_params('name = "p"\nagent = "custom"\n', profile_dir="/srv", image=None)
    assert text == {"profile_text": 'name = "p"\nagent = "custom"\n', "profile_dir": "/srv"}
    default = _profile_params(None, profile_dir="/srv", image="busybox:1")
    assert default["profile_text"] == default_profile_text("busybox:1")
    assert 'entrypoint = "tail"' in default["profile_text"]
    with pytest.raises(ValueError):
        _profile_params(None, profile_dir=None, image=None)
    with pytest.raises(FileNotFoundError):
        _profile_params(str(tmp_path / "missing.toml"), profile_dir=None, image=None)


def test_paths_resolved_on_the_host_workspace(tmp_path: Path):
    host = tmp_path / "workspace"
    (host / "src" / "pkg").mkdir(parents=True)
    (host / "src" / "a.txt").write_text("a")
    (host / "rel").symlink_to("src/pkg")
    (host / "abs").symlink_to("/workspace/src")
    (host / "src" / "up").symlink_to("..")
    (host / "out").symlink_to("/etc")
    (host / "climb").symlink_to("../..")
    (host / "loop").symlink_to("loop")
    root = PurePosixPath("/workspace")

    def inside(path: str) -> bool:
        return _resolves_inside(PurePosixPath(path), root, str(host))

    # Links that stay in the workspace, and paths not made yet, are decided here.
    for path in (
        "/workspace",
        "/workspace/src/a.txt",
        "/workspace/new/dir/file.txt",
        "/workspace/rel/x.py",
        "/workspace/abs/a.txt",
        "/workspace/src/up/src/up/abs/new.txt",
    ):
        assert inside(path), path
    # Leaving it, or what the host cannot tell, goes to the SDK's check in the sandbox.
    for path in (
        "/workspace/out/passwd",
        "/workspace/out",
        "/workspace/climb/etc/passwd",
        "/workspace/loop",
        "/etc/passwd",
        "/workspacex/a",
    ):
        assert not inside(path), path
    assert not _resolves_inside(PurePosixPath("/workspace/a"), root, None)


def _tar(members: dict[str, bytes | None], links: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return out.getvalue()


def test_workspace_archive_is_relative_and_skips_what_it_must():
    raw = _tar(
        {
            "./": None,
            "./a.txt": b"a",
            "./cache/": None,
            "./cache/x": b"x",
            "./src/": None,
            "./src/m.py": b"m",
        },
        links={"./abs": "/workspace/src/m.py", "./out": "/etc/passwd"},
    )
    archive = portable_workspace_tar(raw, root="/workspace", skip={Path("cache")})
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == ["a.txt", "abs", "out", "src", "src/m.py"]
    assert members["abs"].linkname == "src/m.py"
    assert members["out"].linkname == "/etc/passwd"  # left for hydrate's validation to refuse
