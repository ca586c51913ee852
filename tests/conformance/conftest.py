"""Servers for the conformance-kit tests: the real openenv-core server and the minimal raw one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .minimal_server import MinimalServer, serve_in_thread


@pytest.fixture(scope="session")
def openenv_core_url() -> Iterator[str]:
    """The real openenv-core server (uvicorn in a thread) serving a small echo environment."""
    from .openenv_core_echo import run_openenv_core_server

    with run_openenv_core_server() as url:
        yield url


@pytest.fixture(scope="session")
def minimal_url() -> Iterator[str]:
    """A correct minimal server (raw ASGI on Hypercorn/trio), inbound limit 1 MiB."""
    with serve_in_thread(MinimalServer()) as url:
        yield url
