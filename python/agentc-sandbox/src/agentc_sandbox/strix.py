"""Strix's sandbox backend ``"agentc"``: Strix's scans run in agentc sandboxes.

Strix (usestrix/strix) picks its sandbox runtime by ``STRIX_RUNTIME_BACKEND`` from a registry
(`strix.runtime.backends`). `register()` adds ``"agentc"`` to it; register before the first scan
starts. A backend is ``async def f(*, image, manifest, exposed_ports, bind_mounts=None)`` that
returns ``(client, session)`` with the session started (the manifest materialized), as Strix's
own Docker backend does. Here the session is an agentc sandbox launched from the bundled profile
``profiles/strix.toml`` (or one of yours) with Strix's image.

To run the Strix CLI on agentc: ``agentc-strix [strix arguments]`` (or
``python -m agentc_sandbox.strix ...``) registers the backend, sets
``STRIX_RUNTIME_BACKEND=agentc`` when unset, and runs Strix's ``main()``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from .sandbox import AgentcSandboxClient, AgentcSandboxClientOptions, HostMount

BACKEND_NAME = "agentc"

#: Caido's port in Strix's sandbox (strix/runtime/session_manager.py).
CAIDO_PORT = 48080


def profile_path() -> Path:
    """The bundled Strix profile (package data ``agentc_sandbox/profiles/strix.toml``)."""
    return Path(str(resources.files("agentc_sandbox") / "profiles" / "strix.toml"))


def make_backend(
    *,
    profile: str | os.PathLike[str] | None = None,
    backend: str | None = None,
    engine: str | None = None,
    binary: str | os.PathLike[str] | None = None,
) -> Callable[..., Awaitable[tuple[AgentcSandboxClient, Any]]]:
    """A Strix backend factory launching `profile` (default: the bundled one)."""
    chosen = os.fspath(profile) if profile is not None else str(profile_path())

    async def agentc_backend(
        *,
        image: str,
        manifest: Any,
        exposed_ports: Iterable[int],
        bind_mounts: list[Mapping[str, Any]] | None = None,
    ) -> tuple[AgentcSandboxClient, Any]:
        # One client (one `agentc serve`) per scan: Strix deletes the session through the
        # client it got back, and the server ends with its last session.
        client = AgentcSandboxClient(
            binary=binary,
            backend=backend,  # type: ignore[arg-type]
            engine=engine,  # type: ignore[arg-type]
            close_server_when_idle=True,
        )
        options = AgentcSandboxClientOptions(
            profile=chosen,
            image=image,
            exposed_ports=tuple(exposed_ports),
            mounts=tuple(
                HostMount(
                    source=str(mount["source"]),
                    target=str(mount["target"]),
                    read_only=bool(mount.get("read_only", False)),
                )
                for mount in sorted(
                    bind_mounts or (), key=lambda spec: str(spec["target"]).count("/")
                )
            ),
        )
        session = await client.create(options=options, manifest=manifest)
        try:
            await session.start()
        except BaseException:
            try:
                await client.delete(session)
            finally:
                await client.aclose()
            raise
        return client, session

    return agentc_backend


def register(
    name: str = BACKEND_NAME,
    *,
    profile: str | os.PathLike[str] | None = None,
    backend: str | None = None,
    engine: str | None = None,
    binary: str | os.PathLike[str] | None = None,
    supports_bind_mounts: bool = False,
) -> Callable[..., Awaitable[tuple[AgentcSandboxClient, Any]]]:
    """Registers the agentc backend with Strix's registry under `name`; returns the factory.

    Without `supports_bind_mounts` (the default), Strix hands its local source trees as
    manifest entries (``LocalDir``), which the session uploads into the workspace. With it,
    Strix hands them as host directories to bind at ``/workspace/<subdir>``; agentc refuses a
    mount inside another mount's target (the workspace is one), so this works only once agentc
    accepts nested mounts.
    """
    from strix.runtime.backends import register_backend

    factory = make_backend(profile=profile, backend=backend, engine=engine, binary=binary)
    register_backend(name, factory, supports_bind_mounts=supports_bind_mounts)
    return factory


def main(argv: list[str] | None = None) -> Any:
    """Strix's command line with the agentc backend registered (``agentc-strix``)."""
    import sys

    register()
    os.environ.setdefault("STRIX_RUNTIME_BACKEND", BACKEND_NAME)
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    from strix.interface.main import main as strix_main

    return strix_main()


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["BACKEND_NAME", "CAIDO_PORT", "main", "make_backend", "profile_path", "register"]
