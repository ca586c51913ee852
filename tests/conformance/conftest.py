"""Servers for the conformance-kit tests: the real openenv-core server and the minimal raw one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .minimal_server import MinimalServer, serve_in_thread

MINIMAL_MAX_SESSIONS = 4

#: the resume extension's cases: not applicable on a server that does not select its subprotocol
EXTENSION_CASES = ("EXT-NEG-01", "EXT-REQ-01", "EXT-RES-01", "EXT-RES-02", "EXT-EP-01", "EXT-HAND-01")


@pytest.fixture(scope="session")
def openenv_core_url() -> Iterator[str]:
    """The real openenv-core server (uvicorn in a thread) serving a small echo environment."""
    from .openenv_core_echo import run_openenv_core_server

    with run_openenv_core_server() as url:
        yield url


@pytest.fixture(scope="session")
def minimal_url() -> Iterator[str]:
    """A correct minimal server (raw ASGI on Hypercorn/trio): inbound limit 1 MiB, 4 sessions."""
    with serve_in_thread(MinimalServer(max_sessions=MINIMAL_MAX_SESSIONS)) as url:
        yield url
