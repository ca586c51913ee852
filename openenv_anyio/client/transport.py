"""The client's WebSocket I/O: a sans-IO connection (:mod:`openenv_anyio.ws`) over an anyio
byte stream.

Why not a WebSocket library: the inbound size limit must really be enforced (an oversized
message is refused with close code 1009 as soon as it crosses the limit, not after it has
been buffered), pings must be answered while no request is pending, and the same code
must run on asyncio and trio. :class:`~openenv_anyio.ws.WebSocketConnection` holds the
protocol (framing, the fast path, the size limit, the closing handshake, its state); this
module reads and writes the socket for it and decides which task does. The byte stream is
anyio's for TLS and proxies, and a leaner one per backend for plain ``ws://``
(``asyncio_stream``, ``trio_stream``).

Who reads the socket (:class:`ReadTurn`, transitions in :data:`TRANSITIONS`). While a
request waits for its answer, the requesting task reads the socket itself (no hand-off
between tasks on the hot path); it answers pings met on the way. Once no request has read
for ``IDLE_TAKEOVER_S``, the connection's reader task (owned by the client's task group)
takes over, so pings are answered while the client is idle; the next request stops it (a
cancelled socket read loses no data) before reading itself. Two tasks never read at once.
Complete messages nobody asked for yet wait in a small bounded inbox. Nothing is spawned
per frame, and a request's turn is two plain stores (``IDLE`` to ``REQUEST`` and back): the
reader is not told of quick requests, it looks at their count once per ``IDLE_TAKEOVER_S``.
A request still reading at the reader's next look is a slow one: the reader sleeps until
its read ends (the request wakes it), so waiting on slow steps costs no timer::

    IDLE          --a request reads (receive)-->                        REQUEST
    REQUEST       --its read ends-->                                    IDLE
    REQUEST       --the reader finds it still reading, sleeps-->        SLOW_REQUEST
    SLOW_REQUEST  --its read ends, waking the reader-->                 IDLE
    SLOW_REQUEST  --the connection ends, waking the reader-->           REQUEST
    IDLE          --no read for IDLE_TAKEOVER_S, or wanted now-->       READER
    READER        --the connection ends, or the reader is cancelled-->  IDLE
    READER        --a request reads: the reader's read is cancelled-->  HANDING_BACK
    HANDING_BACK  --the reader lets go to the waiting request-->        REQUEST
    HANDING_BACK  --the waiting request is cancelled first-->           READER (it reads on)

The reader is "wanted now" (``_reader_wanted``) when the connection closes, ends or refused
a message: it then reads without waiting for idleness.

Replies in arrival order (see :mod:`openenv_anyio.ws.connection`): the connection's replies
(pongs, close frames) are written before the messages of the same read are returned, and
input the connection held back behind a message is read, before the socket, by the next
``receive()``; so the server sees them in the order of what it sent. The reader task, which
reads only while nobody asks for messages, reads held input at once: a client owes the
server's messages no answer, and pongs and closes must not wait for the next request.
"""

from __future__ import annotations

import enum
import ssl
import time
from collections import deque
from collections.abc import Sequence
from typing import Final, assert_never

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream

from ..core import CloseCode
from ..ws import (
    Broken,
    ConnectionState,
    LargeFrame,
    LargeText,
    PeerClosed,
    Pong,
    Role,
    TooLarge,
    WebSocketConnection,
)
from .asyncio_stream import AsyncioTcpStream, connect_asyncio_tcp, running_on_asyncio
from .errors import (
    ConnectError,
    ConnectionClosedByServer,
    ConnectionLost,
    ConnectionRefused,
    EnvClientError,
    MessageTooLarge,
    ProtocolViolation,
)
from .handshake import open_handshake
from .proxy import HttpProxy, open_tunnel
from .trio_stream import TrioTcpStream, connect_trio_tcp
from .urls import WebSocketAddress

__all__ = ["ReadTurn", "TRANSITIONS", "WebSocketTransport"]

READ_SIZE: Final = 256 * 1024
INBOX_SIZE: Final = 8  # answers are one per request; more waiting frames is a broken peer
CLOSE_GRACE_S: Final = 2.0
# How long the connection must go without a request reading before the reader task reads
# (answering pings a little late is harmless: peers wait seconds for a pong).
IDLE_TAKEOVER_S: Final = 0.02
# The connection states as module constants, read on the per-step path (an enum member read
# off its class is a descriptor call on Python 3.11: bench/README.md, "Client CPU per step").
_OPEN: Final = ConnectionState.OPEN
_REFUSING: Final = ConnectionState.REFUSING


class ReadTurn(enum.Enum):
    """Who reads the socket (see the module doc)."""

    IDLE = "idle"  # nobody: the client is between requests
    REQUEST = "request"  # a request reads for its answer; the reader looks now and then
    SLOW_REQUEST = "slow request"  # a request reads; the reader sleeps until its read ends
    READER = "reader"  # the reader task reads: the client is idle
    HANDING_BACK = "handing back"  # a request waits for the reading reader to let go


TRANSITIONS: Final[dict[ReadTurn, frozenset[ReadTurn]]] = {
    ReadTurn.IDLE: frozenset({ReadTurn.REQUEST, ReadTurn.READER}),
    ReadTurn.REQUEST: frozenset({ReadTurn.IDLE, ReadTurn.SLOW_REQUEST}),
    ReadTurn.SLOW_REQUEST: frozenset({ReadTurn.IDLE, ReadTurn.REQUEST}),
    ReadTurn.READER: frozenset({ReadTurn.IDLE, ReadTurn.HANDING_BACK}),
    ReadTurn.HANDING_BACK: frozenset({ReadTurn.REQUEST, ReadTurn.READER}),
}

# The turns receive() reads and writes on the per-step path, as module constants for the same
# reason as the states above (bench/README.md, "Client CPU per step").
_IDLE: Final = ReadTurn.IDLE
_REQUEST: Final = ReadTurn.REQUEST
_READER: Final = ReadTurn.READER


async def _open_stream(
    address: WebSocketAddress, ssl_context: ssl.SSLContext | None, proxy: HttpProxy | None
) -> anyio.abc.ByteStream:
    """The byte stream to the server: TCP, or a proxy tunnel; TLS on top for ``wss``."""
    url = address.url
    context = (ssl_context or ssl.create_default_context()) if address.secure else None
    try:
        if proxy is None:
            if context is None:
                if running_on_asyncio():
                    return await connect_asyncio_tcp(address.host, address.port)
                return await connect_trio_tcp(address.host, address.port)
            return await anyio.connect_tcp(address.host, address.port, ssl_context=context, tls_hostname=address.host)
        tunnel = await open_tunnel(proxy, address)
        if context is None:
            return tunnel
        try:
            return await TLSStream.wrap(tunnel, hostname=address.host, ssl_context=context)
        except BaseException:
            await anyio.aclose_forcefully(tunnel)
            raise
    except EnvClientError:  # already says what failed (and is an OSError: keep it first)
        raise
    except OSError as exc:  # includes ssl.SSLError and name resolution failures
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        if isinstance(cause, ConnectionRefusedError):
            raise ConnectionRefused(url, "connection refused") from exc
        raise ConnectError(url, str(cause) or type(cause).__name__) from exc
    except anyio.BrokenResourceError as exc:  # the peer hung up during the TLS handshake
        raise ConnectError(url, f"TLS handshake failed: {exc.__cause__ or exc}") from exc


async def _close_at_once(stream: anyio.abc.ByteStream) -> None:
    """Close ``stream`` without waiting for anything, as ``anyio.aclose_forcefully`` does.

    The lean ``ws://`` streams close synchronously, without the cancelled scope
    ``aclose_forcefully`` wraps around a close (bench/README.md, "Client CPU per session").
    Other streams (TLS, proxy tunnels) go through ``aclose_forcefully``.
    """
    if isinstance(stream, (AsyncioTcpStream, TrioTcpStream)):
        stream.close_now()
    else:
        await anyio.aclose_forcefully(stream)


class WebSocketTransport:
    """One open client WebSocket connection.

    Create it with :meth:`open`; run :meth:`run_reader` (and optionally
    :meth:`run_keepalive`) in a task group; :meth:`send_text` and :meth:`receive` carry
    messages; :meth:`close` ends the connection politely, :meth:`abort` at once.
    When the connection ends for any reason other than our own close, :attr:`failure`
    holds the error that says why and :meth:`receive` raises it.
    """

    def __init__(self, address: WebSocketAddress, stream: anyio.abc.ByteStream, max_message_size: int) -> None:
        self.address = address
        self.failure: EnvClientError | None = None
        self.subprotocol: str | None = None  # the one the server selected
        self._stream = stream
        self._conn = WebSocketConnection(Role.CLIENT, max_message_size=max_message_size)
        # one sender at a time: a flag (no lock to take on the hot path) and an event that
        # is set for the tasks waiting while another sends (replaced after each wake-up)
        self._sending = False
        self._send_waiters = 0
        self._send_free = anyio.Event()
        self._inbox: deque[str | bytes] = deque()
        self._closing = False  # a close by the peer is expected, not a failure
        self._stream_closed = False
        self._ended = anyio.Event()
        self._pong = anyio.Event()
        self._ping_count = 0
        self._reader_scope = anyio.CancelScope()
        #: who reads the socket (see the module doc)
        self.read_turn = _IDLE
        self._reads = 0  # bumped by every request's read; the reader watches it go still
        # set when the turn's holder lets go, for the task waiting on it: the reader sleeping
        # through a SLOW_REQUEST, or the request waiting while HANDING_BACK
        self._let_go: anyio.Event | None = None
        self._reader_read_scope: anyio.CancelScope | None = None  # set while the reader awaits a read
        self._reader_wanted = anyio.Event()  # wake the reader now (closing, ending, refusal)

    # -- opening -----------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        address: WebSocketAddress,
        *,
        max_message_size: int,
        subprotocols: Sequence[str] = (),
        extra_headers: Sequence[tuple[bytes, bytes]] = (),
        ssl_context: ssl.SSLContext | None = None,
        proxy: HttpProxy | None = None,
    ) -> WebSocketTransport:
        """Connect TCP (through ``proxy`` if given; TLS for ``wss``) and run the opening handshake.

        No timeout here: the caller bounds the whole of it with a cancel scope.
        """
        stream = await _open_stream(address, ssl_context, proxy)
        try:
            selected, leftover = await open_handshake(stream, address, subprotocols, extra_headers)
            transport = cls(address, stream, max_message_size)
            transport.subprotocol = selected
            if leftover:
                transport._receive(leftover)
                await transport._flush()
        except BaseException:
            await _close_at_once(stream)
            raise
        return transport

    # -- the reader --------------------------------------------------------------------

    async def run_reader(self) -> None:
        """Read whenever no request does: deliver messages, answer pings and closes.

        Never raises for a connection problem: it records :attr:`failure` and ends, so
        the task group that owns it is not torn down by a peer's misbehaviour. After the
        client refused a message (1009) it keeps reading, discarding, for at most
        ``CLOSE_GRACE_S`` so the peer sees the close and can answer it.
        """
        try:
            with self._reader_scope:
                while not self._ended.is_set():
                    await self._await_idle()
                    if self._ended.is_set():
                        break
                    await self._read_while_idle()
        finally:
            self._end()
            await self._close_stream()

    async def _await_idle(self) -> None:
        """Return once no request has read for ``IDLE_TAKEOVER_S`` (or the reader is wanted now).

        A request that is still reading at the next look (a slow step) is not polled: the
        reader sleeps until that request's read ends (``SLOW_REQUEST``: the request wakes
        it), so a thousand sessions waiting on one-second steps cost nothing meanwhile
        (bench/README.md, "Client CPU per session"). When the read it slept
        through was slow (``IDLE_TAKEOVER_S`` or more) and the next request is reading
        already, it sleeps through that one too, without a look in between: slow requests
        in a row cost one wake-up each and no timer (a look that times out costs a cancel
        scope, a timer and an exception thrown and caught). A reader that starts while the
        connection's first read is under way (the ``session`` frame, the first request)
        sleeps through that read the same way. Quick requests in a row never wake it: it
        looks once per ``IDLE_TAKEOVER_S``.
        """
        seen = -1
        slept_through_slow = True  # the read the reader last slept through was slow (or none yet)
        while not self._ended.is_set():
            turn = self.read_turn
            match turn:
                case ReadTurn.IDLE:
                    if seen == self._reads or self._reader_wanted.is_set():
                        return
                case ReadTurn.REQUEST:
                    if seen == self._reads or slept_through_slow:  # a slow request reads
                        # how long it slept, on the process's monotonic clock: a hint only
                        # (which way to wait next)
                        parked_at = time.monotonic()
                        read_ended = self._let_go = anyio.Event()
                        self._to(ReadTurn.SLOW_REQUEST)
                        await read_ended.wait()
                        slept_through_slow = time.monotonic() - parked_at >= IDLE_TAKEOVER_S
                        seen = -1  # nobody reading now is no idleness yet: look first
                        continue
                case ReadTurn.SLOW_REQUEST | ReadTurn.READER | ReadTurn.HANDING_BACK:
                    raise AssertionError(f"the reader looks for idleness while the turn is {turn}")
                case _:
                    assert_never(turn)
            seen = self._reads
            slept_through_slow = False
            with anyio.move_on_after(IDLE_TAKEOVER_S):
                if self._reader_wanted.is_set():  # wanted, but a request reads: look again soon
                    await anyio.sleep_forever()
                await self._reader_wanted.wait()

    async def _read_while_idle(self) -> None:
        """Read and react (IDLE -> READER) until the connection ends or a request wants the socket."""
        self._to(_READER)
        try:
            while not self._ended.is_set() and self.read_turn is _READER:
                data: bytes | None = b""  # input the connection held back: read on without the socket
                if not self._conn.input_held:
                    with anyio.CancelScope() as scope:
                        self._reader_read_scope = scope
                        data = await self._read()
                    self._reader_read_scope = None
                # The connection ended (``failure`` says why). A read cancelled by a request
                # read nothing (``data`` stays empty); one that completed before the
                # cancellation could land (trio) is still processed: no data is ever dropped.
                if data is None:
                    return
                self._receive(data)
                if self._conn.has_bytes_to_send:
                    await self._flush()
        finally:
            self._reader_read_scope = None
            self._reader_let_go()

    def _reader_let_go(self) -> None:
        """The reader stops reading: to the request waiting for the socket, if one does."""
        turn = self.read_turn
        match turn:
            case ReadTurn.READER:
                self._to(_IDLE)
            case ReadTurn.HANDING_BACK:
                self._to(_REQUEST)
                self._wake_waiter()
            case ReadTurn.IDLE | ReadTurn.REQUEST | ReadTurn.SLOW_REQUEST:
                raise AssertionError(f"the reader lets go of a turn it does not hold: {turn}")
            case _:
                assert_never(turn)

    async def _read(self) -> bytes | None:
        """Bytes from the socket; None when the connection has ended (``failure`` says why)."""
        try:
            return await self._stream.receive(READ_SIZE)
        except anyio.EndOfStream:
            self._fail(ConnectionLost(self.address.url, "closed without a WebSocket close frame"))
        except anyio.ClosedResourceError:
            pass  # we closed the stream ourselves
        except (anyio.BrokenResourceError, OSError) as exc:
            self._fail(ConnectionLost(self.address.url, str(exc) or type(exc).__name__))
        self._end()
        return None

    def _end(self) -> None:
        """The connection is over: wake whoever waits for it (the reader, a keep-alive
        waiting for its pong), so the connection's tasks end by themselves."""
        self._ended.set()
        self._reader_wanted.set()
        if self.read_turn is ReadTurn.SLOW_REQUEST:  # the reader sleeps through a read: it ends now
            self._to(_REQUEST)
            self._wake_waiter()
        self._pong.set()

    def _to(self, turn: ReadTurn) -> None:
        """A change of turn off the per-step path (the request's own IDLE <-> REQUEST are plain stores)."""
        assert turn in TRANSITIONS[self.read_turn], f"{self.read_turn} -> {turn}"
        self.read_turn = turn

    def _wake_waiter(self) -> None:
        """Wake the task waiting for the turn's holder to let go."""
        let_go, self._let_go = self._let_go, None
        if let_go is not None:
            let_go.set()

    def _receive(self, data: bytes) -> None:
        """React to ``data`` read from the socket (synchronously; control frames it calls for
        wait in the connection's outbound queue, see :meth:`_flush`, and are sent before the
        messages delivered here are answered: the connection queues none for a frame after
        a message, it holds such input back until the next call)."""
        for event in self._conn.receive_data(data):
            match event:
                case str() | bytes():  # a whole message (``Message``)
                    if self._conn.state is not _REFUSING:
                        self._deliver(event)
                case Pong():
                    self._pong.set()
                case PeerClosed():
                    if not self._closing:
                        self._fail(ConnectionClosedByServer(self.address.url, event.code, event.reason))
                    self._end()
                case TooLarge():
                    self._fail(MessageTooLarge(self.address.url, event.size, event.limit))
                    self._refused(already_closing=not event.close_queued)
                case Broken():  # the server sent something that is not WebSocket
                    self._fail(ProtocolViolation(self.address.url, f"invalid WebSocket frame: {event.detail}"))
                    self._end()
                case LargeFrame() | LargeText():
                    raise AssertionError("the client's connection does not collect large frames")
                case _:
                    assert_never(event)

    @property
    def pings_answered(self) -> int:
        """Pings of the peer answered so far."""
        return self._conn.pings_answered

    def _deliver(self, message: str | bytes) -> None:
        """A complete message: into the inbox, unless the peer floods it."""
        if len(self._inbox) >= INBOX_SIZE:
            self._fail(ProtocolViolation(self.address.url, f"more than {INBOX_SIZE} unrequested frames"))
            self._refuse(CloseCode.POLICY_VIOLATION, "too many unrequested frames")
            return
        self._inbox.append(message)

    def _refuse(self, code: int, reason: str) -> None:
        """Close with ``code`` and stop delivering; the reader waits briefly for the peer's close."""
        already_closing = self._conn.state is not _OPEN
        self._conn.refuse(code, reason)
        self._refused(already_closing=already_closing)

    def _refused(self, *, already_closing: bool) -> None:
        """The connection refused a message: drop what waits; end now if our close went out
        before, else let the reader discard until the peer's close (at most ``CLOSE_GRACE_S``)."""
        self._inbox.clear()
        if already_closing:
            self._end()
            return
        self._reader_scope.deadline = anyio.current_time() + CLOSE_GRACE_S
        self._reader_wanted.set()  # the reader does the discarding once the requester lets go

    def _fail(self, error: EnvClientError) -> None:
        if self.failure is None:
            self.failure = error

    async def _flush(self) -> None:
        """Send the reader's control frames, unless a send is under way: the sender then
        sends them right after its frame, so the reader never stops reading to wait."""
        if self._sending or not self._conn.has_bytes_to_send:
            return
        try:
            await self._send_bytes(b"")
        except EnvClientError:
            self._end()

    # -- keep-alive --------------------------------------------------------------------

    async def run_keepalive(self, interval_s: float, timeout_s: float | None) -> None:
        """Ping every ``interval_s`` of the connection's life; no pong in ``timeout_s`` ends it."""
        while True:
            with anyio.move_on_after(interval_s):
                await self._ended.wait()
                return
            if self._conn.state is not _OPEN:
                return
            self._pong = anyio.Event()
            self._ping_count += 1
            try:
                await self._send_bytes(self._conn.ping(self._ping_count.to_bytes(4, "big")))
            except EnvClientError:
                return
            with anyio.move_on_after(timeout_s):
                await self._pong.wait()
                continue
            if self._ended.is_set():
                return
            self._fail(ConnectionLost(self.address.url, f"no pong within ping_timeout_s={timeout_s:g} s"))
            await self.abort()
            return

    # -- requester side ----------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    async def send_text(self, text: str) -> None:
        """Send one text message."""
        if self._ended.is_set() or self._conn.state is not _OPEN:
            raise self.failure or ConnectionLost(self.address.url, "the connection has ended")
        await self._send_bytes(self._conn.send_text(text))

    async def send_binary(self, data: bytes) -> None:
        """Send one binary message."""
        if self._ended.is_set() or self._conn.state is not _OPEN:
            raise self.failure or ConnectionLost(self.address.url, "the connection has ended")
        await self._send_bytes(self._conn.send_bytes(data))

    async def _send_bytes(self, data: bytes) -> None:
        """Send ``data``, then any control frames the reader queued meanwhile (pongs, closes)."""
        while self._sending:
            self._send_waiters += 1
            try:
                await self._send_free.wait()
            finally:
                self._send_waiters -= 1
        self._sending = True
        try:
            if data:
                await self._stream.send(data)
            while self._conn.has_bytes_to_send:
                await self._stream.send(self._conn.bytes_to_send())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._fail(ConnectionLost(self.address.url, str(exc) or type(exc).__name__))
            raise self.failure from exc  # type: ignore[misc]
        finally:
            self._sending = False
            if self._send_waiters:
                self._send_free.set()
                self._send_free = anyio.Event()

    async def receive(self) -> str | bytes:
        """The next message, read by the calling task; raises :attr:`failure` once the connection has ended.

        One caller at a time (the client serialises its requests). A cancelled call loses
        nothing that the next call would need: a message it completed waits in the inbox.
        """
        if self._inbox:
            return self._inbox.popleft()
        turn = self.read_turn
        if turn is _IDLE:
            self.read_turn = _REQUEST  # the per-step path: a plain store
        else:
            self._ask_reader_to_let_go(turn)
        try:
            if turn is _READER:  # the reader was reading while idle: it lets go, then read here
                let_go = self._let_go = anyio.Event()
                if self._reader_read_scope is not None:
                    self._reader_read_scope.cancel()
                await let_go.wait()
            while not self._inbox:
                if self._ended.is_set() or self._conn.state is _REFUSING:
                    raise self.failure or ConnectionLost(self.address.url, "the connection has ended")
                # the input the connection held back behind the messages returned before (now
                # answered: the caller asks for the next one) is read before the socket
                data = b"" if self._conn.input_held else await self._read()
                if data is None:
                    continue
                self._receive(data)
                if self._conn.has_bytes_to_send:
                    await self._flush()
            return self._inbox.popleft()
        finally:
            self._reads += 1
            if self.read_turn is _REQUEST:
                self.read_turn = _IDLE  # the per-step path: a plain store
            else:
                self._request_let_go()

    def _ask_reader_to_let_go(self, turn: ReadTurn) -> None:
        """A request finds the socket taken: the reader's (READER -> HANDING_BACK), or another
        request's, which is a mistake of the caller."""
        match turn:
            case ReadTurn.READER:
                self._to(ReadTurn.HANDING_BACK)
            case ReadTurn.REQUEST | ReadTurn.SLOW_REQUEST | ReadTurn.HANDING_BACK:
                raise RuntimeError("two tasks are receiving on one connection")
            case ReadTurn.IDLE:
                raise AssertionError("an idle socket is taken without asking")
            case _:
                assert_never(turn)

    def _request_let_go(self) -> None:
        """A request's read ends off the per-step path: it wakes the reader sleeping through
        it, or, cancelled while it waited for the reader to let go, leaves the socket to it."""
        turn = self.read_turn
        match turn:
            case ReadTurn.SLOW_REQUEST:
                self._to(_IDLE)
                self._wake_waiter()
            case ReadTurn.HANDING_BACK:
                self._let_go = None
                self._to(_READER)
            case ReadTurn.IDLE | ReadTurn.REQUEST | ReadTurn.READER:
                raise AssertionError(f"a request lets go of a turn it does not hold: {turn}")
            case _:
                assert_never(turn)

    def receive_nowait(self) -> str | bytes | None:
        """A message already received, or None."""
        return self._inbox.popleft() if self._inbox else None

    # -- closing -----------------------------------------------------------------------

    def expect_close(self) -> None:
        """The peer is about to close: its close frame is no failure."""
        self._closing = True

    async def wait_ended(self) -> None:
        """Wait for the connection's end (the reader reads meanwhile, without the idle delay)."""
        self._reader_wanted.set()
        await self._ended.wait()

    async def close(self, code: int = CloseCode.NORMAL, reason: str = "", *, timeout_s: float = 5.0) -> None:
        """Send a close frame, wait (at most ``timeout_s``) for the peer's, then close TCP.

        Shielded: it completes even when the calling task is being cancelled.
        """
        with anyio.CancelScope(shield=True):
            if not self._ended.is_set() and self._conn.state is _OPEN:
                self._closing = True
                self._conn.close(code, reason)
                self._reader_wanted.set()
                with anyio.move_on_after(timeout_s):
                    try:
                        await self._send_bytes(b"")
                    except EnvClientError:
                        pass
                    else:
                        await self._ended.wait()
            await self.abort()

    async def leave(self, code: int = CloseCode.GOING_AWAY, reason: str = "", *, timeout_s: float = 1.0) -> None:
        """Send a close frame, then close TCP without waiting for the peer's close.

        For a client that gives its session up while the peer may still be executing a
        request (its close would only come after that): the close frame tells the peer the
        session is over rather than the link lost. Shielded; the write is bounded by
        ``timeout_s``.
        """
        with anyio.CancelScope(shield=True):
            if not self._ended.is_set() and self._conn.state is _OPEN:
                self._closing = True
                self._conn.close(code, reason)
                with anyio.move_on_after(timeout_s):
                    try:
                        await self._send_bytes(b"")
                    except EnvClientError:
                        pass
            await self.abort()

    async def abort(self) -> None:
        """Close the TCP connection now; after a refusal, let the reader finish its close first."""
        if self._conn.state is _REFUSING and not self._ended.is_set():
            return  # the reader ends within CLOSE_GRACE_S and closes the stream
        self._end()
        await self._close_stream()

    async def _close_stream(self) -> None:
        self._stream_closed = True
        await _close_at_once(self._stream)

    @property
    def finished(self) -> bool:
        """The connection has ended and its socket is closed: its reader and keep-alive tasks
        end by themselves, nothing they wait for stays pending."""
        return self._stream_closed and self._ended.is_set()
