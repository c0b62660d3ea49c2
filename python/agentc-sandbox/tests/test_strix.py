"""Strix's backend registry gives a working "agentc" backend (the busybox image for Strix's)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("strix.runtime.backends", reason="strix-agent is not installed")

from agents.sandbox.entries import LocalDir  # noqa: E402
from agents.sandbox.manifest import Environment, Manifest  # noqa: E402

from agentc_sandbox import strix as agentc_strix  # noqa: E402

from .conftest import fetch_page, sandbox_names  # noqa: E402

pytestmark = pytest.mark.live


def test_bundled_profile_is_package_data():
    text = agentc_strix.profile_path().read_text()
    assert 'add_capabilities = ["NET_ADMIN", "NET_RAW"]' in text
    assert "host_gateway = true" in text
    assert 'command = ["tail", "-f", "/dev/null"]' in text


async def test_registry_returns_a_working_agentc_backend(live, tmp_path, monkeypatch):
    from strix.runtime import backends

    agentc_strix.register()
    assert "agentc" in backends.supported_backends()
    # Strix uploads its local sources as manifest entries (agentc refuses a mount nested in
    # the workspace mount).
    assert not backends.backend_supports_bind_mounts("agentc")
    factory = backends.get_backend("agentc")

    source = tmp_path / "target-repo"
    (source / "pkg").mkdir(parents=True)
    (source / "app.py").write_text("print('target')\n")
    (source / "pkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    # What Strix's session manager builds (strix/runtime/session_manager.py).
    manifest = Manifest(
        # strix.runtime.session_manager.build_manifest_entries's entry for a local source.
        entries={"target-repo": LocalDir(src=source.resolve())},
        environment=Environment(
            value={
                "PYTHONUNBUFFERED": "1",
                "HOST_GATEWAY": "host.docker.internal",
                "NO_PROXY": "localhost,127.0.0.1",
            }
        ),
    )
    client, session = await factory(
        image=live["image"],
        manifest=manifest,
        exposed_ports=(agentc_strix.CAIDO_PORT,),
        bind_mounts=[],
    )
    name = session.state.sandbox
    try:
        assert name in sandbox_names(live["bin"])
        result = await session.exec("echo $HOST_GATEWAY; id -u")
        assert result.ok(), result.stderr
        assert result.stdout.split() == [b"host.docker.internal", b"0"]
        status = (await session.exec("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")).stdout
        fields = dict(line.split(b":\t") for line in status.splitlines())
        # NET_ADMIN (12) and NET_RAW (13), nothing else.
        assert int(fields[b"CapEff"], 16) == (1 << 12) | (1 << 13)
        assert fields[b"NoNewPrivs"] == b"1"
        hosts = (await session.exec("cat /etc/hosts")).stdout
        assert b"host.docker.internal" in hosts
        uploaded = await session.exec(
            "cat /workspace/target-repo/app.py /workspace/target-repo/pkg/mod.py"
        )
        assert uploaded.stdout == b"print('target')\nX = 1\n"

        # Caido's port: reached only at the endpoint the session resolves, on loopback.
        started = await session.exec(
            f"mkdir -p /tmp/www && echo caido > /tmp/www/index.html && httpd -p {agentc_strix.CAIDO_PORT} -h /tmp/www"
        )
        assert started.ok(), started.stderr
        endpoint = await session.resolve_exposed_port(agentc_strix.CAIDO_PORT)
        assert endpoint.host == "127.0.0.1"
        body = await fetch_page(endpoint)
        assert body == b"caido\n"
    finally:
        # What Strix's cleanup does: delete through the client it got back.
        await client.delete(session)
    assert name not in sandbox_names(live["bin"])
    assert not os.path.exists(session.state.workspace_dir)
    assert (source / "app.py").exists()
