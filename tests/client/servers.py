"""Servers the client tests talk to over real loopback sockets.

``real_openenv_server`` runs openenv-core's FastAPI app under uvicorn in a thread;
``our_server`` runs openenv-anyio's server when it is importable.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import uvicorn


@contextlib.contextmanager
def real_openenv_server(
    max_concurrent_envs: int | None = None, ping_interval_s: float | None = None, ping_timeout_s: float | None = None
) -> Iterator[str]:
    """openenv-core 0.3's server on 127.0.0.1 (a free port); yields its base URL.

    Its default limit is one session; without ``max_concurrent_envs`` it gets 32. Pings
    (uvicorn's) only when ``ping_interval_s`` is given."""
    from openenv.core.env_server.http_server import create_fastapi_app

    from .echo_envs import CoreEchoEnv, EchoAction, EchoObservation

    app = create_fastapi_app(CoreEchoEnv, EchoAction, EchoObservation, max_concurrent_envs=max_concurrent_envs or 32)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ws_ping_interval=ping_interval_s, ws_ping_timeout=ping_timeout_s
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("openenv-core server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def our_server_available() -> bool:
    try:
        import openenv_anyio.server  # noqa: F401
    except ImportError:
        return False
    return True


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


SERVERS: dict[str, Callable[..., contextlib.AbstractContextManager[str]]] = {"openenv-core": real_openenv_server}
if our_server_available():
    SERVERS["openenv-anyio"] = our_server
