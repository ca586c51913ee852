"""Who reads the socket (the transport's :class:`ReadTurn`), in memory on both backends: the
server's end is a byte stream the test feeds, so each turn can be seen while it holds.

Every change of turn off the per-step path goes through the transition table (an assertion
there fails the reader's task, hence the test); these tests take each transition of the
table and check the turn on both sides of it.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.client import transport as transport_module
from openenv_anyio.client.errors import ConnectionLost
from openenv_anyio.client.transport import IDLE_TAKEOVER_S, TRANSITIONS, ReadTurn, WebSocketTransport
from openenv_anyio.client.urls import WebSocketAddress
from openenv_anyio.ws import encode_text_frame

pytestmark = pytest.mark.anyio


class MemoryServer(anyio.abc.ByteStream):
    """The server's end of a connection in memory: the test feeds what the client reads
    (:meth:`feed`, :meth:`hang_up`); what the client writes is kept in :attr:`written`, and
    while :attr:`send_gate` is set a write waits for it. A cancelled ``receive()`` takes nothing."""

    def __init__(self) -> None:
        self._inbound = bytearray()
        self._arrived = anyio.Event()
        self._hung_up = False
        self.closed = False
        self.written = bytearray()
        self.send_gate: anyio.Event | None = None

    def feed(self, data: bytes) -> None:
        self._inbound += data
        self._arrived.set()

    def hang_up(self) -> None:
        self._hung_up = True
        self._arrived.set()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            if self._inbound:
                data = bytes(self._inbound[:max_bytes])
                del self._inbound[:max_bytes]
                return data
            if self._hung_up:
                raise anyio.EndOfStream
            self._arrived = anyio.Event()
            await self._arrived.wait()

    async def send(self, item: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self.send_gate is not None:
            await self.send_gate.wait()
        self.written += item
        await anyio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        self.closed = True
        self._arrived.set()

    def frames_written(self) -> list[tuple[Opcode, object]]:
        proto = FrameProtocol(client=False, extensions=[])
        proto.receive_bytes(bytes(self.written))
        return [(frame.opcode, frame.payload) for frame in proto.received_frames()]


def _text(message: str) -> bytes:
    return encode_text_frame(message, masked=False)


def _ping(payload: bytes) -> bytes:
    return bytes(FrameProtocol(client=False, extensions=[]).ping(payload))


class Connection:
    """A transport over a :class:`MemoryServer`, its reader task running in ``tasks``."""

    def __init__(self, tasks: anyio.abc.TaskGroup) -> None:
        self.server = MemoryServer()
        self.transport = WebSocketTransport(WebSocketAddress("ws", "127.0.0.1", 1, "/ws"), self.server, 1 << 20)
        self.tasks = tasks
        self.reader_done = anyio.Event()

    def start_reader(self) -> None:
        async def reader() -> None:
            await self.transport.run_reader()
            self.reader_done.set()

        self.tasks.start_soon(reader)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) until ``condition()`` holds."""
        with anyio.fail_after(5):
            while not condition():
                await anyio.sleep(IDLE_TAKEOVER_S / 4)

    def turn(self) -> ReadTurn:
        return self.transport.read_turn

    async def turn_becomes(self, turn: ReadTurn) -> None:
        await self.until(lambda: self.turn() is turn)

    async def hand_back_while_the_reader_writes(
        self,
    ) -> tuple[list[str | bytes | BaseException], anyio.CancelScope, anyio.Event]:
        """Start a ``receive()`` while the reader reads and, holding the turn, waits to write
        a pong (HANDING_BACK until the returned gate is set): the receive's outcome and scope,
        and the gate."""
        self.server.send_gate = gate = anyio.Event()
        await self.turn_becomes(ReadTurn.READER)
        self.server.feed(_ping(b"held"))
        await self.until(lambda: self.transport.pings_answered == 1)
        outcome, scope = self.receive_in_task()
        await self.turn_becomes(ReadTurn.HANDING_BACK)
        return outcome, scope, gate

    async def answered(self, wire: bytes, reading: ReadTurn, after: ReadTurn) -> list[str | bytes | BaseException]:
        """A ``receive()`` seen holding ``reading`` until the server sends ``wire``, then
        ``after``: what it returned."""
        outcome, _ = self.receive_in_task()
        await self.turn_becomes(reading)
        self.server.feed(wire)
        await self.turn_becomes(after)
        return outcome

    def receive_in_task(self) -> tuple[list[str | bytes | BaseException], anyio.CancelScope]:
        """Start a ``receive()`` in its own task: what it returned or raised, and its scope."""
        outcome: list[str | bytes | BaseException] = []
        scope = anyio.CancelScope()

        async def receive() -> None:
            with scope:
                try:
                    outcome.append(await self.transport.receive())
                except Exception as exc:
                    outcome.append(exc)

        self.tasks.start_soon(receive)
        return outcome, scope


@contextlib.asynccontextmanager
async def open_connection() -> AsyncIterator[Connection]:
    """A :class:`Connection` for the body of the block (bounded); aborted after it."""
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            connection = Connection(tasks)
            try:
                yield connection
            finally:
                await connection.transport.abort()


async def test_a_request_holds_the_turn_while_it_reads() -> None:
    """IDLE -> REQUEST -> IDLE (no reader task: the request alone reads)."""
    async with open_connection() as connection:
        assert connection.turn() is ReadTurn.IDLE
        assert await connection.answered(_text("answer"), ReadTurn.REQUEST, ReadTurn.IDLE) == ["answer"]


async def test_the_reader_sleeps_through_a_slow_request_and_takes_over_after_it() -> None:
    """REQUEST -> SLOW_REQUEST (the reader parks) -> IDLE (the request wakes it) -> READER."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        connection.start_reader()
        wire = _ping(b"during") + _text("slow answer")
        assert await connection.answered(wire, ReadTurn.SLOW_REQUEST, ReadTurn.READER) == ["slow answer"]
        assert transport.pings_answered == 1
        server.feed(_ping(b"idle"))  # the reader answers it: the client is idle
        await connection.until(lambda: transport.pings_answered == 2)
        assert [frame for frame in server.frames_written() if frame[0] is Opcode.PONG] == [
            (Opcode.PONG, b"during"),
            (Opcode.PONG, b"idle"),
        ]


async def test_a_request_takes_the_socket_back_from_the_reader() -> None:
    """READER -> HANDING_BACK (the reader is busy writing a pong) -> REQUEST -> IDLE."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        connection.start_reader()
        outcome, _, gate = await connection.hand_back_while_the_reader_writes()
        server.feed(_text("answer"))
        await anyio.sleep(3 * IDLE_TAKEOVER_S)
        assert transport.read_turn is ReadTurn.HANDING_BACK and outcome == []  # the reader still writes
        gate.set()
        await connection.until(lambda: bool(outcome))
        assert outcome == ["answer"]
        assert server.frames_written() == [(Opcode.PONG, b"held")]


async def test_a_request_cancelled_while_the_reader_lets_go_leaves_it_reading() -> None:
    """HANDING_BACK -> READER: the reader reads on, answers pings, and the next request
    takes the socket over as usual."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        connection.start_reader()
        outcome, scope, gate = await connection.hand_back_while_the_reader_writes()
        scope.cancel()
        await connection.turn_becomes(ReadTurn.READER)
        gate.set()
        server.feed(_ping(b"later"))
        await connection.until(lambda: transport.pings_answered == 2)
        assert transport.read_turn is ReadTurn.READER and outcome == []
        # the reader lets go, then sleeps through the read
        assert await connection.answered(_text("answer"), ReadTurn.SLOW_REQUEST, ReadTurn.READER) == ["answer"]


async def test_the_connection_ending_under_a_slow_request_ends_the_sleeping_reader() -> None:
    """SLOW_REQUEST -> REQUEST (the end wakes the reader, which ends) -> IDLE."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        connection.start_reader()
        outcome, _ = connection.receive_in_task()
        await connection.turn_becomes(ReadTurn.SLOW_REQUEST)
        server.hang_up()
        await connection.until(connection.reader_done.is_set)
        await connection.turn_becomes(ReadTurn.IDLE)
        assert len(outcome) == 1 and isinstance(outcome[0], ConnectionLost)
        assert transport.finished


async def test_the_connection_ending_under_the_reader_ends_it() -> None:
    """READER -> IDLE: the reader ends with the connection; a request then gets the failure."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        connection.start_reader()
        await connection.turn_becomes(ReadTurn.READER)
        server.hang_up()
        await connection.until(connection.reader_done.is_set)
        assert transport.read_turn is ReadTurn.IDLE and transport.finished
        with pytest.raises(ConnectionLost):
            await transport.receive()
        assert transport.read_turn is ReadTurn.IDLE


async def test_two_requests_never_read_at_once() -> None:
    """A second ``receive()`` while a request holds the turn (quick, slow, or taking it back)
    is refused and leaves the turn as it was."""
    async with open_connection() as connection:
        transport, server = connection.transport, connection.server
        first, _ = connection.receive_in_task()
        await connection.turn_becomes(ReadTurn.REQUEST)
        with pytest.raises(RuntimeError, match="two tasks"):
            await transport.receive()
        assert connection.turn() is ReadTurn.REQUEST
        connection.start_reader()
        await connection.turn_becomes(ReadTurn.SLOW_REQUEST)
        with pytest.raises(RuntimeError, match="two tasks"):
            await transport.receive()
        assert connection.turn() is ReadTurn.SLOW_REQUEST
        server.feed(_text("first"))
        await connection.turn_becomes(ReadTurn.READER)
        assert first == ["first"]
        second, _, gate = await connection.hand_back_while_the_reader_writes()
        with pytest.raises(RuntimeError, match="two tasks"):
            await transport.receive()
        assert connection.turn() is ReadTurn.HANDING_BACK
        gate.set()
        server.feed(_text("second"))
        await connection.turn_becomes(ReadTurn.READER)
        assert second == ["second"]


# -- the table itself ---------------------------------------------------------------------


def test_the_transition_table_is_closed_and_every_turn_returns_to_idle() -> None:
    assert set(TRANSITIONS) == set(ReadTurn)
    for turn, targets in TRANSITIONS.items():
        assert turn not in targets and targets <= set(ReadTurn)
    reached, frontier = {ReadTurn.IDLE}, [ReadTurn.IDLE]
    while frontier:
        for target in TRANSITIONS[frontier.pop()] - reached:
            reached.add(target)
            frontier.append(target)
    assert reached == set(ReadTurn)
    for turn in ReadTurn:  # no turn is a dead end: each leads back to IDLE
        seen, frontier = {turn}, [turn]
        while ReadTurn.IDLE not in seen and frontier:
            for target in TRANSITIONS[frontier.pop()] - seen:
                seen.add(target)
                frontier.append(target)
        assert ReadTurn.IDLE in seen, turn


def test_the_module_doc_draws_the_transition_table() -> None:
    """The theory of operation's arrows are the table: neither changes alone."""
    doc = inspect.getdoc(transport_module) or ""
    arrows = re.findall(r"^\s+([A-Z_]+)\s+--.*-->\s+([A-Z_]+)", doc, re.MULTILINE)
    assert arrows, "the module doc draws no transitions"
    drawn = {(ReadTurn[source], ReadTurn[target]) for source, target in arrows}
    assert drawn == {(turn, target) for turn, targets in TRANSITIONS.items() for target in targets}
