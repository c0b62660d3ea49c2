"""AgentcSandboxClient against the SDK's DockerSandboxClient on the same image.

Measures, through each client's public session API:
  - create to first exec: ``client.create()`` + ``session.start()`` + the first ``exec("true")``;
  - exec round trip: ``session.exec("true", shell=False)``;
  - write and read of a 1 MiB file: ``session.write()`` / ``session.read()``.
and prints p50/p90 (milliseconds) per client. Every sandbox it creates is deleted.

    AGENTC_BIN=target/debug/agentc python bench/bench_exec.py --image IMAGE [--execs 200]

IMAGE must be local (nothing is pulled): the repository's busybox test image
(`bash scripts/build-test-image.sh --print-tag`). The agentc sessions use a custom profile of
IMAGE with agentc's default hardening; `--agentc-backend cli` measures agentc's docker-CLI
backend instead of its Engine API one (both: `--agentc-backend api,cli`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def measure(
    label: str,
    make_client: Callable[[], Any],
    make_options: Callable[[], Any],
    *,
    creates: int,
    execs: int,
    files: int,
) -> dict[str, Any]:
    from agents.sandbox import Manifest

    client = make_client()
    results: dict[str, list[float]] = {
        "create_to_first_exec": [],
        "exec": [],
        "write_1mib": [],
        "read_1mib": [],
    }
    try:
        for _ in range(creates):
            start = time.perf_counter()
            session = await client.create(manifest=Manifest(), options=make_options())
            await session.start()
            first = await session.exec("true", shell=False)
            results["create_to_first_exec"].append((time.perf_counter() - start) * 1000)
            assert first.ok(), first
            await client.delete(session)

        session = await client.create(manifest=Manifest(), options=make_options())
        await session.start()
        try:
            for _ in range(5):  # warm-up
                await session.exec("true", shell=False)
            for _ in range(execs):
                results["exec"].append(await _timed(lambda: session.exec("true", shell=False)))
            payload = os.urandom(1024 * 1024)
            for i in range(files):
                path = Path(f"bench/blob-{i % 4}.bin")
                results["write_1mib"].append(
                    await _timed(lambda path=path: session.write(path, io.BytesIO(payload)))
                )

                async def _read(path: Path = path) -> None:
                    data = (await session.read(path)).read()
                    assert data == payload

                results["read_1mib"].append(await _timed(_read))
        finally:
            await client.delete(session)
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
    summary = {
        name: {
            "n": len(samples),
            "p50_ms": round(_pct(samples, 0.5), 2),
            "p90_ms": round(_pct(samples, 0.9), 2),
            "mean_ms": round(statistics.fmean(samples), 2),
        }
        for name, samples in results.items()
    }
    return {"client": label, **summary}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", required=True)
    parser.add_argument("--execs", type=int, default=200)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--creates", type=int, default=5)
    parser.add_argument("--agentc-backend", default="api", help="api, cli or api,cli")
    parser.add_argument("--skip-docker", action="store_true")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()

    from agentc_sandbox import AgentcSandboxClient, AgentcSandboxClientOptions

    profile_dir = tempfile.mkdtemp(prefix="agentc-bench-")
    profile = Path(profile_dir) / "bench.toml"
    profile.write_text(
        "\n".join(
            [
                'name = "sdk-bench"',
                'agent = "custom"',
                "[image]",
                f'ref = "{args.image}"',
                'command = ["tail", "-f", "/dev/null"]',
                "",
            ]
        )
    )
    rows = []
    for backend in [b.strip() for b in args.agentc_backend.split(",") if b.strip()]:
        rows.append(
            await measure(
                f"agentc ({backend})",
                lambda backend=backend: AgentcSandboxClient(backend=backend),
                lambda: AgentcSandboxClientOptions(profile=str(profile)),
                creates=args.creates,
                execs=args.execs,
                files=args.files,
            )
        )
    if not args.skip_docker:
        import docker
        from agents.sandbox.sandboxes.docker import DockerSandboxClient, DockerSandboxClientOptions

        docker_client = docker.from_env()
        rows.append(
            await measure(
                "docker (SDK)",
                lambda: DockerSandboxClient(docker_client),
                lambda: DockerSandboxClientOptions(image=args.image),
                creates=args.creates,
                execs=args.execs,
                files=args.files,
            )
        )
        docker_client.close()
    os.remove(profile)
    os.rmdir(profile_dir)

    if args.json:
        print(json.dumps(rows, indent=2))
        return
    from importlib.metadata import version

    print(
        f"openai-agents {version('openai-agents')}, image {args.image}, python {sys.version.split()[0]}"
    )
    header = f"{'client':<14} {'metric':<22} {'n':>4} {'p50 ms':>9} {'p90 ms':>9}"
    print(header)
    print("-" * len(header))
    for row in rows:
        for metric in ("create_to_first_exec", "exec", "write_1mib", "read_1mib"):
            m = row[metric]
            print(
                f"{row['client']:<14} {metric:<22} {m['n']:>4} {m['p50_ms']:>9.2f} {m['p90_ms']:>9.2f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
