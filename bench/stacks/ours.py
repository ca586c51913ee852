"""Our stack: ``openenv_anyio.server.EnvServer`` (Quart-Trio on Hypercorn) and ``EnvClient``.

The client runs on asyncio or trio (``BACKENDS``). Until the server and client packages
exist, every entry point raises ``StackUnavailable`` and the harness skips the rows that
need them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bench import sessions
from bench.procs import ServerProcess
from bench.procs import start_server as _start
from bench.stacks import StackUnavailable

NAME = "ours"
BACKEND = "asyncio"
BACKENDS = ("asyncio", "trio")


def check_server() -> None:
    try:
        from openenv_anyio.server import EnvServer, ServerConfig  # noqa: F401
    except ImportError as exc:
        raise StackUnavailable(f"openenv_anyio.server not available: {exc}") from exc


def check_client() -> None:
    try:
        from openenv_anyio.client import EnvClient  # noqa: F401
    except ImportError as exc:
        raise StackUnavailable(f"openenv_anyio.client not available: {exc}") from exc


def check_available() -> None:
    """Raise ``StackUnavailable`` unless both our server and our client import."""
    check_server()
    check_client()


def start_server(kind: str, *, max_concurrent_envs: int | None = None, wait: bool = True) -> ServerProcess:
    """Our ``EnvServer`` for env ``kind`` (``echo_inline`` is declared NON_BLOCKING)."""
    check_server()
    argv = ["ours", kind]
    if max_concurrent_envs is not None:
        argv += ["--max-concurrent-envs", str(max_concurrent_envs)]
    return _start(f"ours[{kind}]", argv, wait=wait)


@asynccontextmanager
async def open_session(url: str, **options: Any) -> AsyncIterator[Any]:
    """One ``EnvClient`` connection (works under asyncio and trio); ``options`` are
    ``EnvClient``'s keyword arguments (its defaults when none)."""
    check_client()
    from openenv_anyio.client import EnvClient

    async with EnvClient(url, **options) as env:
        yield env


async def run_sessions(url: str, sessions_: int, steps: int, **kwargs: Any) -> sessions.RunResult:
    """Drive ``sessions_`` concurrent sessions with our client (on the running backend)."""
    check_client()
    return await sessions.run_sessions(open_session, url, sessions_, steps, **kwargs)
