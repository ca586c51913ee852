"""The real openenv-core server (FastAPI app under uvicorn) on a loopback port, in a thread.

Tests of every part use it to check interoperability with the reference implementation.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn


@contextlib.contextmanager
def serve_openenv_core(
    env_cls: type,
    action_cls: type,
    observation_cls: type,
    *,
    max_concurrent_envs: int = 8,
    ping_interval_s: float | None = None,
    ping_timeout_s: float | None = None,
) -> Iterator[str]:
    """Serve ``env_cls`` with openenv-core 0.3 on 127.0.0.1 (a free port); yield the base URL.

    uvicorn pings only when ``ping_interval_s`` is given. The real server logs a traceback
    for each connection it drops on bad input (its known defects); those logs are muted.
    """
    from openenv.core.env_server.http_server import create_fastapi_app

    app = create_fastapi_app(env_cls, action_cls, observation_cls, max_concurrent_envs=max_concurrent_envs)
    with serve_asgi(app, ping_interval_s=ping_interval_s, ping_timeout_s=ping_timeout_s) as url:
        yield url


@contextlib.contextmanager
def serve_asgi(app: Any, *, ping_interval_s: float | None = None, ping_timeout_s: float | None = None) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on 127.0.0.1 (a free port), in a thread; yield the base URL."""
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        ws_ping_interval=ping_interval_s,
        ws_ping_timeout=ping_timeout_s,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="openenv-core-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
