"""HTTP error answers in upstream 0.10's words, which callers match on: the status line's
reason phrase (never ``422 `` with nothing after it), ``{"detail": "Not Found"}`` rather than
an HTML page, and the ``type``/``msg`` of a 422 for a body or an action that is no object.
Asked of upstream 0.10's own server and of ours, over a raw socket (the status line as sent)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig
from tests.upstream_peers import peer_named, serve_upstream

#: (method, path, JSON body or None)
REQUESTS = [
    ("POST", "/step", {"action": 5}),
    ("POST", "/step", {}),
    ("POST", "/step", []),
    ("POST", "/reset", []),
    ("GET", "/no-such-route", None),
    ("GET", "/step", None),
    ("GET", "/health", None),
]


@pytest.fixture(scope="module")
def upstream_url(upstream_template: Callable[..., Path]) -> Iterator[str]:
    peer = peer_named("openenv")
    with serve_upstream(peer, upstream_template(peer)) as url:
        yield url


@pytest.fixture(scope="module")
def ours_url() -> Iterator[str]:
    with EnvServer(EchoEnv, ServerConfig()).run_in_thread() as running:
        yield running.url


def _ask(url: str, method: str, path: str, body: object) -> tuple[str, object]:
    """The status line and the JSON body of one request sent as raw HTTP/1.1."""
    parts = urlsplit(url)
    payload = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode() + b"\r\n" + payload)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    content = rest.partition(b"\r\n\r\n")[2]
    return status_line.decode(), json.loads(content)


def _words(answer: object) -> object:
    """What callers match on: a detail string, or each 422 entry's loc, type and msg."""
    assert isinstance(answer, dict)
    detail = answer.get("detail")
    if isinstance(detail, list):
        return [(tuple(entry["loc"]), entry["type"], entry["msg"]) for entry in detail]
    return detail if detail is not None else "ok"


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS, ids=[f"{m} {p} {b!r}" for m, p, b in REQUESTS])
def test_our_http_errors_read_as_upstream_s(
    upstream_url: str, ours_url: str, method: str, path: str, body: object
) -> None:
    upstream_line, upstream_answer = _ask(upstream_url, method, path, body)
    our_line, our_answer = _ask(ours_url, method, path, body)
    assert our_line == upstream_line  # e.g. "HTTP/1.1 422 Unprocessable Entity"
    assert not our_line.endswith(" ")
    if our_line.endswith(" OK"):
        return
    assert _words(our_answer) == _words(upstream_answer)
