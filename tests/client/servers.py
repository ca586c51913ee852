"""Servers the client tests talk to over real loopback sockets.

``real_openenv_server`` runs openenv-core's FastAPI app under uvicorn in a thread;
``our_server`` runs openenv-anyio's server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def real_openenv_server(
    max_concurrent_envs: int | None = None, ping_interval_s: float | None = None, ping_timeout_s: float | None = None
) -> Iterator[str]:
    """openenv-core 0.3's server serving the echo env (32 sessions unless told otherwise)."""
    from openenv_core_server import serve_openenv_core

    from .echo_envs import CoreEchoEnv, EchoAction, EchoObservation

    with serve_openenv_core(
        CoreEchoEnv,
        EchoAction,
        EchoObservation,
        max_concurrent_envs=max_concurrent_envs or 32,
        ping_interval_s=ping_interval_s,
        ping_timeout_s=ping_timeout_s,
    ) as url:
        yield url


@contextlib.contextmanager
def our_server(
    max_concurrent_envs: int | None = None, ping_interval_s: float | None = None, ping_timeout_s: float | None = None
) -> Iterator[str]:
    """openenv-anyio's server on 127.0.0.1 (a free port) serving the plain echo env."""
    from openenv_anyio.server import EnvServer, ServerConfig

    from .echo_envs import PlainEchoEnv

    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        max_concurrent_envs=max_concurrent_envs,
        ping_interval_s=ping_interval_s,
        ping_timeout_s=ping_timeout_s,
    )
    server = EnvServer(PlainEchoEnv, config)
    with server.run_in_thread() as running:
        yield running.url


SERVERS: dict[str, Callable[..., contextlib.AbstractContextManager[str]]] = {
    "openenv-core": real_openenv_server,
    "openenv-anyio": our_server,
}
