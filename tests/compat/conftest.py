"""Servers for the compat tests: ours (in a thread) and upstream 0.10's own (``uvicorn
server.app:app`` in its peer venv), each serving the same wire shapes; a cutting proxy in
front of ours. Both anyio backends wherever a loop is involved. The servers live as long as
this package's tests (not the whole run: a server running in this process holds the
process-wide settings other packages' tests check)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenv_anyio.server import EnvServer, ServerConfig
from tests.resume.cutting_proxy import CuttingProxy
from tests.upstream_peers import Peer, peer_named, serve_upstream

from .envs import NotesTools, TinyEcho

MCP_SURFACE = Path(__file__).resolve().parents[1] / "mcp_surface"
SESSIONS = 64


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def peer() -> Peer:
    found = peer_named("openenv")
    found.require()
    return found


@pytest.fixture(scope="package")
def ours_tiny() -> Iterator[tuple[str, type[TinyEcho]]]:
    counting = type("TinyEcho", (TinyEcho,), {"instances": []})
    config = ServerConfig(max_concurrent_envs=SESSIONS, ping_interval_s=None, ping_timeout_s=None)
    with EnvServer(counting, config).run_in_thread() as running:
        yield running.url, counting


@pytest.fixture(scope="package")
def upstream_tiny(peer: Peer, upstream_template: Callable[..., Path]) -> Iterator[str]:
    with serve_upstream(peer, upstream_template(peer, SESSIONS)) as url:
        yield url


@pytest.fixture(params=["ours", "upstream"])
def tiny_url(request: pytest.FixtureRequest) -> str:
    """An echo server with the template's wire shape: ours, then upstream 0.10's."""
    if request.param == "ours":
        url, _ = request.getfixturevalue("ours_tiny")
        return str(url)
    return str(request.getfixturevalue("upstream_tiny"))


@pytest.fixture(scope="package")
def ours_tools() -> Iterator[str]:
    with EnvServer(NotesTools, ServerConfig(ping_interval_s=None, ping_timeout_s=None)).run_in_thread() as running:
        yield running.url


@pytest.fixture(scope="package")
def upstream_tools(peer: Peer) -> Iterator[str]:
    with serve_upstream(peer, MCP_SURFACE, "upstream_tool_app:app") as url:
        yield url


@pytest.fixture(params=["ours", "upstream"])
def tools_url(request: pytest.FixtureRequest) -> str:
    """A tool environment's server: ours (NotesTools), then upstream's (NotesEnvironment)."""
    return str(request.getfixturevalue("ours_tools" if request.param == "ours" else "upstream_tools"))


@pytest.fixture
def counting() -> type[TinyEcho]:
    return type("TinyEcho", (TinyEcho,), {"instances": []})


@pytest.fixture
def proxy(counting: type[TinyEcho]) -> Iterator[CuttingProxy]:
    """Our server behind a cutting proxy (no cuts until the test arms its plan)."""
    config = ServerConfig(max_concurrent_envs=SESSIONS, ping_interval_s=None, ping_timeout_s=None)
    with EnvServer(counting, config).run_in_thread() as running:
        parts = urlsplit(running.url)
        cutting = CuttingProxy((parts.hostname or "127.0.0.1", parts.port or 80))
        with cutting.running() as url:
            cutting.url = url
            yield cutting
