"""The real OpenEnv stack: openenv-core's FastAPI app on uvicorn, and its websockets client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bench import sessions
from bench.procs import ServerProcess
from bench.procs import start_server as _start
from bench.stacks import StackUnavailable

NAME = "openenv"
BACKEND = "asyncio"  # openenv-core's client runs on asyncio only


def check_available() -> None:
    """Raise ``StackUnavailable`` unless openenv-core (server and client) can be imported."""
    try:
        import openenv.core.env_server.http_server
        import openenv.core.generic_client  # noqa: F401
    except ImportError as exc:
        raise StackUnavailable(f"openenv-core not available: {exc}") from exc


def start_server(kind: str, *, max_concurrent_envs: int = 10_000, wait: bool = True) -> ServerProcess:
    """openenv-core's ``create_fastapi_app`` for env ``kind`` on uvicorn, in a subprocess."""
    check_available()
    argv = ["openenv", kind, "--max-concurrent-envs", str(max_concurrent_envs)]
    return _start(f"openenv[{kind}]", argv, wait=wait)


@asynccontextmanager
async def open_session(url: str) -> AsyncIterator[Any]:
    """One ``GenericEnvClient`` connection (its own defaults, as its users run it)."""
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url) as env:
        yield env


async def run_sessions(url: str, sessions_: int, steps: int, **kwargs: Any) -> sessions.RunResult:
    """Drive ``sessions_`` concurrent sessions with openenv-core's client (on asyncio)."""
    check_available()
    return await sessions.run_sessions(open_session, url, sessions_, steps, **kwargs)
