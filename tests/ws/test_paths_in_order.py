"""The paths that carry WebSocket traffic answer in arrival order, checked against wsproto
with random read splits: the client's transport (its requester reads and its reader task's
hand-off, in memory, both backends) and the server's direct ``/ws`` path (a real server on
loopback running the Autobahn testee's echo in place of the session).

What Autobahn|Testsuite found (``tools/autobahn/run``) stays found here: a ping between the
fragments of a message is answered before the message's echo (5.6-5.20), and a message in
the same read as a bad frame is echoed before the close frame that fails the connection
(3.2-3.4, 4.1.3-4.2.5, 5.15).
"""

from __future__ import annotations

import importlib.util
import socket
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.client.errors import EnvClientError
from openenv_anyio.client.transport import IDLE_TAKEOVER_S, WebSocketTransport
from openenv_anyio.client.urls import WebSocketAddress
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.ws import Role

from .ordered_wire import cut, endings, ordered_specs, ordered_wire, peer_of, read_as

BACKENDS = ["asyncio", "trio"]
_cuts = st.lists(st.integers(1, 70_000), max_size=6)


# -- the client's transport, in memory -------------------------------------------------------


class ScriptedServer(anyio.abc.ByteStream):
    """The server's end of a connection in memory: each ``receive()`` returns the next read
    exactly as cut (at most ``max_bytes`` of it); after the last, it waits until
    :meth:`hang_up`, then reports the end of the stream; what the client sends is kept in
    :attr:`written`. A cancelled ``receive()`` takes nothing."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = deque(reads)
        self._hung_up = anyio.Event()
        self.written = bytearray()
        self.closed = False

    def hang_up(self) -> None:
        self._hung_up.set()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        if self.closed:
            raise anyio.ClosedResourceError
        if self._reads:
            data = self._reads.popleft()
            if len(data) > max_bytes:
                self._reads.appendleft(data[max_bytes:])
            return data[:max_bytes]
        await self._hung_up.wait()
        raise anyio.EndOfStream

    async def send(self, item: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        self.written += item  # taken at once, as a socket with room takes it
        await anyio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        self.closed = True


async def _echo_client(reads: list[bytes], messages: int, pauses: list[bool] | None) -> bytes:
    """Run a client transport over ``reads``, echoing ``messages`` messages; what it wrote.
    ``pauses``: run the reader task too, and after the n-th echo stay idle long enough for
    it to take the socket over when ``pauses[n]`` (the connection may then end before every
    message is echoed: the idle reader answers a close at once)."""
    server = ScriptedServer(reads)
    transport = WebSocketTransport(WebSocketAddress("ws", "127.0.0.1", 1, "/ws"), server, 1 << 20)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            if pauses is not None:
                tasks.start_soon(transport.run_reader)
            try:
                for n in range(messages):
                    message = await transport.receive()
                    if isinstance(message, str):
                        await transport.send_text(message)
                    else:
                        await transport.send_binary(message)
                    if pauses and pauses[n % len(pauses)]:
                        await anyio.sleep(3 * IDLE_TAKEOVER_S)
            except EnvClientError:
                if pauses is None:
                    raise
            server.hang_up()  # nothing more comes: what is held is read, then the end
            with pytest.raises(EnvClientError):
                while True:  # after an early end, the messages left undelivered; then the end
                    await transport.receive()
            await transport.abort()
    assert transport.finished
    return bytes(server.written)


def _messages(replies: list[tuple[Opcode, object]]) -> int:
    return sum(opcode in (Opcode.TEXT, Opcode.BINARY) for opcode, _ in replies)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(specs=ordered_specs, ending=endings, cuts=_cuts)
def test_the_transport_answers_in_arrival_order_however_reads_are_cut(
    backend: str, specs: list[tuple[str, Any]], ending: str, cuts: list[int]
) -> None:
    wire, replies = ordered_wire(Role.CLIENT, specs, ending)
    written = anyio.run(_echo_client, cut(wire, cuts), _messages(replies), None, backend=backend)
    assert read_as(Role.CLIENT, written) == replies


def _by_kind(frames: list[tuple[Opcode, object]]) -> dict[str, list[tuple[Opcode, object]]]:
    kinds = {"messages": (Opcode.TEXT, Opcode.BINARY), "pongs": (Opcode.PONG,), "closes": (Opcode.CLOSE,)}
    return {kind: [frame for frame in frames if frame[0] in opcodes] for kind, opcodes in kinds.items()}


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(specs=ordered_specs, ending=endings, cuts=_cuts, pauses=st.lists(st.booleans(), min_size=1, max_size=4))
def test_the_transport_loses_nothing_when_its_reader_takes_over(
    backend: str, specs: list[tuple[str, Any]], ending: str, cuts: list[int], pauses: list[bool]
) -> None:
    """The read hand-off: whichever task reads (the requester, or the reader once the client
    is idle), messages arrive once and in order, every ping is answered once and in order,
    and the close comes last. While the client is idle its reader answers pings and closes
    at once (a client owes no answer to the server's messages): a close may then end the
    connection before the messages ahead of it are echoed, never before they are delivered."""
    wire, replies = ordered_wire(Role.CLIENT, specs, ending)
    written = anyio.run(_echo_client, cut(wire, cuts), _messages(replies), pauses, backend=backend)
    frames, owed = _by_kind(read_as(Role.CLIENT, written)), _by_kind(replies)
    assert frames["pongs"] == owed["pongs"] and frames["closes"] == owed["closes"]
    echoed = len(frames["messages"])
    assert frames["messages"] == owed["messages"][:echoed]
    assert echoed == len(owed["messages"]) or ending != "none"
    if owed["closes"]:
        assert read_as(Role.CLIENT, written)[-1] == replies[-1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_transport_answers_a_ping_inside_a_fragmented_message_before_its_echo(backend: str) -> None:
    """Autobahn 5.6, all in one read."""
    peer = peer_of(Role.CLIENT)
    wire = bytes(peer.send_data("frag", False)) + bytes(peer.ping(b"p")) + bytes(peer.send_data("ment", True))
    written = anyio.run(_echo_client, [wire], 1, None, backend=backend)
    assert read_as(Role.CLIENT, written) == [(Opcode.PONG, b"p"), (Opcode.TEXT, "fragment")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_transport_echoes_a_message_before_failing_on_the_bad_frame_after_it(backend: str) -> None:
    """Autobahn 3.2, all in one read: before, the close frame (1002) went out first and the
    echo was refused behind it."""
    peer = peer_of(Role.CLIENT)
    wire = bytes(peer.send_data("Hello", True)) + bytes([0xA1]) + bytes(peer.send_data("rsv", True))[1:]
    written = anyio.run(_echo_client, [wire + bytes(peer.ping(b"never"))], 1, None, backend=backend)
    assert read_as(Role.CLIENT, written) == [(Opcode.TEXT, "Hello"), (Opcode.CLOSE, (1002, "invalid frame"))]


# -- the server's direct /ws path, on loopback -----------------------------------------------


def _testee() -> Any:
    """tools/autobahn/testee.py, whose echo stands in for the session on the server's paths."""
    path = Path(__file__).resolve().parents[2] / "tools" / "autobahn" / "testee.py"
    spec = importlib.util.spec_from_file_location("autobahn_testee", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def direct_echo() -> Iterator[tuple[str, int]]:
    """(host, port) of an echo on the server's direct /ws path."""
    server = EnvServer(EchoEnv, ServerConfig(port=0))
    application = _testee().EchoApplication("direct")
    server.asgi = application  # the testee's echo in place of the router, as the testee runs it
    with server.run_in_thread() as running:
        assert application.direct, "the Hypercorn adapter is not engaged"
        host, port = running.url.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)


def _open(address: tuple[str, int]) -> tuple[socket.socket, bytes]:
    """A WebSocket to /ws (handshake done by hand) and the bytes read past the handshake."""
    sock = socket.create_connection(address, timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(
        f"GET /ws HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, f"closed during the handshake: {head!r}"
        head += chunk
    head, _, rest = head.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock, rest


def _exchange(address: tuple[str, int], reads: list[bytes], expected: int) -> list[tuple[Opcode, object]]:
    """Send ``reads`` one write each (a little apart, so the server mostly reads them apart),
    then read frames until ``expected`` arrived or the server closed."""
    sock, received = _open(address)
    with sock:
        for data in reads:
            sock.sendall(data)
            time.sleep(0.002)
        reader = FrameProtocol(client=True, extensions=[])
        reader.receive_bytes(received)
        frames: list[tuple[Opcode, object]] = []
        parts: list[Any] = []  # wsproto hands a frame on in pieces as its bytes arrive
        while True:
            for frame in reader.received_frames():
                if frame.opcode.iscontrol():
                    frames.append((frame.opcode, frame.payload))
                    continue
                parts.append(frame)
                if frame.frame_finished and frame.message_finished:
                    payloads = [part.payload for part in parts]
                    frames.append(
                        (parts[0].opcode, "".join(payloads) if isinstance(payloads[0], str) else b"".join(payloads))
                    )
                    parts = []
            if len(frames) >= expected:
                return frames
            data = sock.recv(65536)
            if not data:
                return frames
            reader.receive_bytes(data)


@settings(max_examples=40, deadline=None)
@given(specs=ordered_specs, ending=endings, cuts=_cuts)
def test_the_direct_path_answers_in_arrival_order_however_reads_are_cut(
    direct_echo: tuple[str, int], specs: list[tuple[str, Any]], ending: str, cuts: list[int]
) -> None:
    wire, replies = ordered_wire(Role.SERVER, specs, ending)
    assert _exchange(direct_echo, cut(wire, cuts), len(replies)) == replies


def test_the_direct_path_echoes_a_message_before_failing_on_the_bad_frame_after_it(
    direct_echo: tuple[str, int],
) -> None:
    """Autobahn 3.2 in one write: before, the close frame (1002) went out first and the echo
    was dropped behind it."""
    peer = peer_of(Role.SERVER)
    wire = bytes(peer.send_data("Hello", True)) + bytes([0xA1]) + bytes(peer.send_data("rsv", True))[1:]
    wire += bytes(peer.ping(b"never"))
    assert _exchange(direct_echo, [wire], 3) == [(Opcode.TEXT, "Hello"), (Opcode.CLOSE, (1002, "invalid frame"))]


def test_the_direct_path_answers_a_ping_between_messages_between_their_echoes(direct_echo: tuple[str, int]) -> None:
    peer = peer_of(Role.SERVER)
    wire = bytes(peer.send_data("one", True)) + bytes(peer.ping(b"p")) + bytes(peer.send_data("two", True))
    wire += bytes(peer.send_data("frag", False)) + bytes(peer.ping(b"q")) + bytes(peer.send_data("ment", True))
    assert _exchange(direct_echo, [wire], 5) == [
        (Opcode.TEXT, "one"),
        (Opcode.PONG, b"p"),
        (Opcode.TEXT, "two"),
        (Opcode.PONG, b"q"),
        (Opcode.TEXT, "fragment"),
    ]
