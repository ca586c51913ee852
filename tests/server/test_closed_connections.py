"""A connection its client closed is closed by the server at once, not held until the
keep-alive timeout: a client that closes right after reading its response (the usual HTTP
client without keep-alive) left the server holding the socket, with the idle timer of its
next request, for ``keep_alive_timeout``: under 8 churning clients, thousands of open files
(uvicorn: a few dozen).

The keep-alive timeout is raised to two minutes here, so the test tells "closed because the
client closed" from "closed by the idle timer" by a margin no busy machine erases."""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Iterator

import pytest
from hypercorn.config import Config

from openenv_anyio.envs.echo import EchoEnv

from .conftest import running, wait_for

CLIENTS = 8
REQUESTS = 25


@pytest.fixture
def long_keep_alive() -> Iterator[None]:
    saved = Config.keep_alive_timeout
    Config.keep_alive_timeout = 120.0
    try:
        yield
    finally:
        Config.keep_alive_timeout = saved


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.usefixtures("long_keep_alive")
def test_connections_closed_by_their_clients_are_closed_at_once() -> None:
    with running(EchoEnv) as server:
        port = int(server.url.rsplit(":", 1)[1])
        before = open_files()

        def client() -> None:
            for _ in range(REQUESTS):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("GET", "/health")
                assert connection.getresponse().read() == b'{"status":"healthy"}'
                connection.close()

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wait_for(lambda: open_files() <= before + 2, timeout=30)
