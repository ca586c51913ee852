"""The interop matrix: every upstream peer (``tools/test-deps/peers/*.txt``) against our
client, server and kit, in both directions. Each peer runs as a subprocess from its own
virtual environment (``tests/upstream_peers.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.upstream_peers import Peer, peer_params, serve_ours, serve_upstream

#: sessions the raised-limit servers admit (the client tests open one or two at a time)
SESSIONS = 4
#: the template's environment class, as ``openenv-anyio serve`` names it from the template folder
TEMPLATE_TARGET = "server.tiny_env_environment:TinyEnvironment"
#: the template's app, as its Dockerfile serves it (``uvicorn server.app:app``)
TEMPLATE_APP = "server.app:app"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session", params=peer_params())
def peer(request: pytest.FixtureRequest) -> Peer:
    peer: Peer = request.param
    peer.require()
    return peer


@pytest.fixture(scope="session")
def upstream_url(peer: Peer, upstream_template: Callable[..., Path]) -> Iterator[str]:
    """Upstream's own server (``uvicorn server.app:app``) for its ``openenv init`` template,
    raised to :data:`SESSIONS` sessions."""
    with serve_upstream(peer, upstream_template(peer, SESSIONS)) as url:
        yield url


@pytest.fixture(scope="session")
def adapter_url(peer: Peer, upstream_template: Callable[..., Path]) -> Iterator[str]:
    """Our server, run in the peer's venv, serving the same template environment unchanged
    through our adapter (``openenv-anyio serve server.tiny_env_environment:TinyEnvironment``)."""
    with serve_ours(peer, upstream_template(peer), TEMPLATE_TARGET, "--max-concurrent-envs", str(SESSIONS)) as url:
        yield url
