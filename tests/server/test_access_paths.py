"""The access decision and the router read the same path (SEC-TOKEN-1): every route of the
server's table, by every method it answers, asked for in every form a request target can
take (double slashes, absolute form, dot segments, percent-encoding, trailing slash) with no
token, an agent's and the operator's, is refused or served as its plain path is."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Iterator

import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import RunningServer
from openenv_anyio.server.access import route_path

from .conftest import TIMEOUT, running

OPERATOR = "operator-token-for-path-tests"
AGENT = "agent-token-for-path-tests"
WEBSOCKET_ROUTES = ("/ws", "/ws/ui", "/mcp")


@pytest.fixture(scope="module")
def locked_server() -> Iterator[RunningServer]:
    with running(EchoEnv, token=OPERATOR, agent_tokens=(AGENT,)) as server:
        yield server


def _routes(server: RunningServer) -> list[tuple[str, str, bool]]:
    """(method, path, websocket) for every route the server answers."""
    app = server.server.asgi._http_app
    found: set[tuple[str, str, bool]] = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = rule.rule.replace("<name>", "dashboard.js").replace("<env>", EchoEnv.__name__)
        assert "<" not in path, f"a route with a variable this test does not fill: {rule.rule}"
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):
                found.add((method, path, False))
    found.update(("GET", path, True) for path in WEBSOCKET_ROUTES)
    return sorted(found)


def _forms(host: str, port: int) -> dict[str, Callable[[str], str]]:
    def percent(path: str) -> str:
        head, _, tail = path.rpartition("/")
        return f"{head}/%{ord(tail[0]):02X}{tail[1:]}" if tail else path

    return {
        "double slash": lambda path: "/" + path,
        "inner double slash": lambda path: path.replace("/", "//"),
        "absolute form": lambda path: f"http://{host}:{port}{path}",
        "absolute form, other host": lambda path: f"http://example.invalid{path}",
        "dot segment": lambda path: "/." + path,
        "dot-dot segment": lambda path: "/health/.." + path,
        "encoded dot-dot segment": lambda path: "/web/%2e%2e" + path,
        "percent-encoded letter": percent,
        "encoded slash": lambda path: "/%2F" + path.lstrip("/"),
        "trailing slash": lambda path: path.rstrip("/") + "/",
    }


def _status(server: RunningServer, method: str, target: str, token: str | None, websocket: bool) -> int:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", f"{host}:{port}")
        if token is not None:
            connection.putheader("Authorization", f"Bearer {token}")
        body = b""
        if websocket:
            for name, value in (
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Sec-WebSocket-Version", "13"),
            ):
                connection.putheader(name, value)
        elif method == "POST":
            body = b"{}"
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body or None)
        response = connection.getresponse()
        if response.status != 101:
            response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.parametrize("token", [None, AGENT, OPERATOR], ids=["no token", "agent", "operator"])
def test_every_path_form_of_every_route_is_decided_as_its_plain_path(locked_server, token) -> None:
    host, port = locked_server.url.removeprefix("http://").split(":")
    forms = _forms(host, int(port))
    mismatches = []
    for method, path, websocket in _routes(locked_server):
        plain = _status(locked_server, method, path, token, websocket)
        for name, form in forms.items():
            target = form(path)
            got = _status(locked_server, method, target, token, websocket)
            if name == "trailing slash" and target != path:
                # another path to the router (often no route): refused wherever the plain one is
                ok = got == plain if plain in (401, 403) else True
            else:
                ok = got == plain
            if not ok:
                mismatches.append(f"{method} {target!r} ({name}): {got}, plain {path}: {plain}")
    assert not mismatches, "\n".join(mismatches)


def test_an_agent_token_never_reads_metrics_by_another_path(locked_server) -> None:
    host, port = locked_server.url.removeprefix("http://").split(":")
    for target in (
        "//metrics",
        f"http://{host}:{port}/metrics",
        "/./metrics",
        "/%2Fmetrics",
        "/web/../metrics",
        "/metrics/",
    ):
        assert _status(locked_server, "GET", target, AGENT, False) == 403, target


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("/metrics", "/metrics"),
        ("//metrics", "/metrics"),
        ("/ws//ui", "/ws/ui"),
        ("http://host:1/metrics", "/metrics"),
        ("HTTPS://host/metrics", "/metrics"),
        ("http://host", "/"),
        ("http://host?x", "/"),
        ("/./metrics", "/metrics"),
        ("/a/b/../../metrics", "/metrics"),
        ("/../../metrics", "/metrics"),
        ("/web/.", "/web/"),
        ("/web/..", "/"),
        ("", "/"),
        ("metrics", "/metrics"),
        ("/metrics/", "/metrics/"),
    ],
)
def test_route_path_is_the_path_the_router_resolves(target, path) -> None:
    assert route_path(target) == path
