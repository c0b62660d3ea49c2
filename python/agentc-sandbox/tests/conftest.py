"""Fixtures of the live tests: the agentc binary, a container engine and the busybox test image.

A live test needs `agentc serve --stdio` (``AGENTC_BIN``, else the repository's
``target/debug/agentc``, else `agentc` on ``PATH``) and a Docker daemon with the test image
(``scripts/build-test-image.sh``, built here when missing; no registry is contacted). Without
them the test is skipped with the reason printed, unless ``AGENTC_REQUIRE_DOCKER=1``: then it
fails. The tests connect only to the containers they create, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BUILD_IMAGE = REPO / "scripts" / "build-test-image.sh"


def _require() -> bool:
    return os.environ.get("AGENTC_REQUIRE_DOCKER") == "1"


def _unavailable(reason: str) -> None:
    if _require():
        pytest.fail(f"AGENTC_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    print(f"\nskipped: {reason}", file=sys.stderr)
    pytest.skip(reason)


def pytest_report_header(config: pytest.Config) -> list[str]:
    import agents

    version = getattr(agents, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("openai-agents")
    return [f"openai-agents {version}; agentc binary: {_find_binary() or 'none'}"]


def _find_binary() -> str | None:
    explicit = os.environ.get("AGENTC_BIN")
    if explicit:
        return explicit
    built = REPO / "target" / "debug" / "agentc"
    if built.is_file():
        return str(built)
    return shutil.which("agentc")


@pytest.fixture(scope="session")
def agentc_bin() -> str:
    binary = _find_binary()
    if binary is None or not os.access(binary, os.X_OK):
        _unavailable(
            "no agentc binary: set AGENTC_BIN or build target/debug/agentc (cargo build -p agentc)"
        )
    request = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
    try:
        done = subprocess.run(
            [binary, "serve", "--stdio"], input=request, capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        _unavailable(f"{binary} serve --stdio does not answer: {error}")
    answer = None
    for line in done.stdout.splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
    if not answer or "result" not in answer:
        _unavailable(
            f"{binary} serve --stdio does not answer initialize: "
            f"{done.stderr.decode(errors='replace').strip()[:500]}"
        )
    os.environ["AGENTC_BIN"] = binary
    return binary


@pytest.fixture(scope="session")
def docker_ready() -> None:
    if shutil.which("docker") is None:
        _unavailable("no docker CLI on PATH")
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        _unavailable(f"docker info failed: {error}")
    if done.returncode != 0:
        _unavailable(
            f"the Docker daemon is not reachable: {done.stderr.decode(errors='replace').strip()[:300]}"
        )


@pytest.fixture(scope="session")
def test_image(docker_ready: None) -> str:
    """The busybox test image's tag, built by scripts/build-test-image.sh when missing."""
    tag = subprocess.run(
        ["bash", str(BUILD_IMAGE), "--print-tag"], capture_output=True, text=True, check=True
    ).stdout.strip()
    present = subprocess.run(["docker", "image", "inspect", tag], capture_output=True)
    if present.returncode != 0:
        built = subprocess.run(["bash", str(BUILD_IMAGE)], capture_output=True, text=True)
        if built.returncode != 0:
            _unavailable(f"cannot build the test image {tag}: {built.stderr.strip()[-500:]}")
    return tag


@pytest.fixture(scope="session")
def live(agentc_bin: str, test_image: str) -> dict[str, str]:
    """Everything a live test needs: the binary and the image."""
    return {"bin": agentc_bin, "image": test_image}


@pytest.fixture
def profile_path(tmp_path: Path, live: dict[str, str]) -> Path:
    """A custom profile of the test image kept alive by tail, running as uid 1000."""
    path = tmp_path / "sandbox.toml"
    path.write_text(profile_text(live["image"], user="1000"))
    return path


def profile_text(image: str, *, user: str | None = None, name: str = "sdk-test") -> str:
    lines = [
        f'name = "{name}"',
        'agent = "custom"',
        "",
        "[image]",
        f'ref = "{image}"',
        'command = ["tail", "-f", "/dev/null"]',
    ]
    if user is not None:
        lines.append(f'user = "{user}"')
    return "\n".join(lines) + "\n"


def agentc_ps(binary: str) -> list[dict]:
    """`agentc ps --all --format json`: every container agentc launched."""
    done = subprocess.run(
        [binary, "ps", "--all", "--format", "json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.strip()
    if not text:
        return []
    data = json.loads(text)
    return data if isinstance(data, list) else data.get("containers", [])


def sandbox_names(binary: str) -> set[str]:
    names = set()
    for entry in agentc_ps(binary):
        for key in ("name", "Name", "names", "Names"):
            value = entry.get(key)
            if isinstance(value, str):
                names.add(value.lstrip("/"))
    return names


#: A command that prints the status of every process in the sandbox (`/proc/PID/status`).
PROCESSES = ["sh", "-c", 'for f in /proc/[0-9]*/status; do cat "$f"; done 2>/dev/null; true']


def live_processes(status: bytes) -> list[str]:
    """The names of the processes in `PROCESSES`'s output that are not zombies (a process
    killed in a sandbox whose PID 1 does not reap, `tail` without `init`, stays a zombie)."""
    names: list[str] = []
    name = ""
    for line in status.decode(errors="replace").splitlines():
        if line.startswith("Name:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("State:") and not line.split(":", 1)[1].strip().startswith("Z"):
            names.append(name)
    return names


async def fetch_page(endpoint, path: str = "/index.html") -> bytes:
    """The page at `path` of a server in a sandbox, through the endpoint its session resolved
    (only ever that address), retried for up to about 5 seconds while the server starts."""
    url = f"http://{endpoint.host}:{endpoint.port}{path}"
    body = b""
    for _ in range(50):
        try:
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
            break
        except OSError:
            await asyncio.sleep(0.1)
    return body


async def remove_if_left(binary: str, name: str) -> None:
    """Deletes the sandbox `name` a failed test left (kept), through a server that adopts it
    without `keep`, so that its end deletes it."""
    if name not in sandbox_names(binary):
        return
    from agentc_sandbox import AgentcSandboxClient

    cleanup = AgentcSandboxClient()
    server = await cleanup.server()
    await server.request("attach", {"sandbox": name, "keep": False})
    await cleanup.aclose()
