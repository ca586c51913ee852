"""``/ws`` upgrades answered from the connection's first bytes (``hypercorn_adapter.direct_upgrade``)
answer every handshake as Hypercorn answers it (``WS-CONN-1``, ``EXT-NEG-1``, ``SEC-TOKEN-1``):
each request is sent whole (taken over at accept) and in two pieces (the head not whole at accept:
Hypercorn's path), and the answers compared."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from openenv_anyio.core import SUBPROTOCOL
from openenv_anyio.server.request_head import read_upgrade

from .test_direct_ws import RESET, EchoText, client_frame

TIMEOUT = 10.0
KEY = base64.b64encode(b"0123456789abcdef")


def upgrade(path: bytes = b"/ws", *extra: bytes, key: bytes = KEY) -> bytes:
    lines = [
        b"GET " + path + b" HTTP/1.1",
        b"Host: 127.0.0.1",
        b"Upgrade: websocket",
        b"Connection: keep-alive, Upgrade",
        b"Sec-WebSocket-Key: " + key,
        b"Sec-WebSocket-Version: 13",
        *extra,
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n"


class Answer:
    """An HTTP response head (and body) read off a raw socket; the socket stays open."""

    def __init__(self, url: str, request: bytes, *, split: bool, then: bytes = b"") -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT)
        if split:  # the request line first: the head is not whole when the server looks at it
            cut = request.index(b"\r\n") + 2
            self.sock.sendall(request[:cut])
            time.sleep(0.3)
            self.sock.sendall(request[cut:] + then)
        else:
            self.sock.sendall(request + then)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            assert chunk, f"connection closed before the head: {data!r}"
            data += chunk
        head, _, self.rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        self.headers = sorted(
            (name.strip().lower(), value.strip()) for name, _, value in (line.partition(":") for line in lines[1:])
        )
        length = int(dict(self.headers).get("content-length", "0"))
        while self.status_line.split()[1] != "101" and len(self.rest) < length:
            self.rest += self.sock.recv(65536)

    def without(self, *names: str) -> list[tuple[str, str]]:
        return [(name, value) for name, value in self.headers if name not in names]

    def frames(self, until: bytes) -> bytes:
        """What the server sends after the head, read until ``until`` shows up in it."""
        data = self.rest
        while until not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def both(url: str, request: bytes, then: bytes = b"") -> tuple[Answer, Answer]:
    return Answer(url, request, split=False, then=then), Answer(url, request, split=True, then=then)


def test_an_upgrade_is_answered_the_same_both_ways(serve) -> None:
    with serve(EchoText) as server:
        whole, split = both(server.url, upgrade(), then=RESET)
        assert whole.status_line == split.status_line == "HTTP/1.1 101 Switching Protocols"
        assert whole.without("date") == split.without("date")
        digest = hashlib.sha1(KEY + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()  # RFC 6455 4.2.2
        assert ("sec-websocket-accept", base64.b64encode(digest).decode()) in whole.headers
        assert not any(name == "sec-websocket-extensions" for name, _ in whole.headers)  # deflate declined
        for answer in (whole, split):
            assert b'"type":"observation"' in answer.frames(b"observation").replace(b" ", b"")


def test_the_resume_subprotocol_is_selected_the_same_both_ways(serve) -> None:
    offer = b"Sec-WebSocket-Protocol: chat, " + SUBPROTOCOL.encode()
    with serve(EchoText) as server:
        whole, split = both(server.url, upgrade(b"/ws", offer))
        assert whole.status_line == split.status_line
        assert ("sec-websocket-protocol", SUBPROTOCOL) in whole.headers
        assert [name for name, _ in whole.without("date")] == [name for name, _ in split.without("date")]


def test_a_refused_upgrade_is_the_same_response_both_ways(serve) -> None:
    with serve(EchoText, token="operator-secret", agent_tokens=("agent-secret",)) as server:
        whole, split = both(server.url, upgrade())
        assert whole.status_line == split.status_line == "HTTP/1.1 401 Unauthorized"
        assert ("www-authenticate", 'Bearer realm="openenv"') in whole.headers
        assert json.loads(whole.rest) == json.loads(split.rest)
        assert whole.without("date", "connection") == split.without("date", "connection")
        assert ("connection", "close") in whole.headers
        token = b"Authorization: Bearer agent-secret"
        granted = Answer(server.url, upgrade(b"/ws", token), split=False)
        assert granted.status_line == "HTTP/1.1 101 Switching Protocols"


def test_frames_and_a_close_sent_with_the_handshake(serve) -> None:
    with serve(EchoText) as server:
        close = client_frame((1000).to_bytes(2, "big") + b"bye", opcode=0x8)
        answer = Answer(server.url, upgrade(), split=False, then=RESET + close)
        data = answer.frames(b"\x88")
        assert b"observation" in data
        assert data.endswith(b"\x88\x05\x03\xe8bye")  # the close, answered with its own code
        assert answer.sock.recv(1) == b""  # and the connection ends


def test_a_handshake_hypercorn_must_judge_is_left_to_it(serve) -> None:
    with serve(EchoText) as server:
        version = upgrade().replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8")
        whole, split = both(server.url, version)
        assert whole.status_line == split.status_line
        assert whole.status_line.split()[1] == "400"


@pytest.mark.parametrize(
    "request_head",
    [
        upgrade(),
        upgrade(b"/ws?session_id=s%201&x=1", b"Sec-WebSocket-Protocol: a, b"),
    ],
)
def test_read_upgrade_takes_a_whole_handshake(request_head: bytes) -> None:
    found = read_upgrade(request_head + b"\x81\x80")
    assert found is not None
    assert found.size == len(request_head)
    assert found.key == KEY
    assert found.raw_path == b"/ws"
    assert (b"sec-websocket-version", b"13") in found.headers


def test_read_upgrade_reads_the_query_and_the_subprotocols() -> None:
    found = read_upgrade(
        upgrade(b"/ws?session_id=s%201&x=1", b"Sec-WebSocket-Protocol: a,  b", b"sec-websocket-protocol: c")
    )
    assert found is not None
    assert found.query_string == b"session_id=s%201&x=1"
    assert found.subprotocols == ["a", "b", "c"]


@pytest.mark.parametrize(
    "request_head",
    [
        upgrade()[:-2],  # not whole yet
        upgrade().replace(b"GET", b"POST"),
        upgrade().replace(b"HTTP/1.1", b"HTTP/1.0"),
        upgrade().replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8"),
        upgrade(key=b"c2hvcnQ="),  # 5 bytes, not 16
        upgrade().replace(b"Upgrade: websocket", b"Upgrade: h2c"),
        upgrade().replace(b"keep-alive, Upgrade", b"keep-alive"),
        upgrade().replace(b"Host: 127.0.0.1\r\n", b""),
        upgrade(b"/ws", b"Content-Length: 0"),
        upgrade(b"/ws", b"X-Folded: a", b" b"),
        upgrade(b"/ws", b"Bad Name: x"),
        upgrade(b"/ws", b"X-Control: a\x00b"),
        upgrade(b"*"),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ],
)
def test_read_upgrade_leaves_anything_else_to_the_http_server(request_head: bytes) -> None:
    assert read_upgrade(request_head) is None
