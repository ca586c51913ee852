"""One end of a WebSocket connection as a sans-IO state machine (RFC 6455 after the handshake).

Theory of operation. The transport owns the socket and the tasks; this object owns
everything between bytes and messages: the inbound buffer (through :class:`FrameSplitter`,
which decodes the common text frame and the peer's plain close itself and streams every
other byte to wsproto's ``FrameProtocol``, built only when a frame first needs it: a
connection that exchanges text and closes normally never builds one), the message size
limit, answering pings, the closing handshake and the bytes that must go out because of what
came in. The transport calls :meth:`WebSocketConnection.receive_data` with what it read; it
writes whatever :meth:`bytes_to_send` holds (pongs, close frames) and then acts on the
events it got back; it sends the frames of :attr:`~WebSocketConnection.send_text` and
:meth:`ping` itself.

Replies in arrival order. The peer sees our replies in the order of what it sent: a pong
answers a ping before the answers to the messages after it, and after the answers to the
messages before it; a close frame (the echo of the peer's, or ours failing the connection)
follows the answers to the messages before it (Autobahn|Testsuite 5.6-5.20: a ping between
a message's fragments; 3.2-4.2.5 and 5.15: a message in the same read as a bad frame). So one
:meth:`~WebSocketConnection.receive_data` call never queues a reply for a frame that came
after a message it returns: on such a frame (a ping, a close to echo, a message over the
limit, bytes that break the protocol) it stops, holds the rest of what it received, and
sets :attr:`~WebSocketConnection.input_held`. Every reply of a call then precedes every
message of it, hence the transport's order (write :meth:`bytes_to_send`, then hand the
messages on), and once the messages are answered (the application asks for the next one)
the transport calls ``receive_data(b"")`` instead of reading the socket while
:attr:`~WebSocketConnection.input_held` is set. Bytes given while input is held are read
after the held ones.

Its :class:`Role` is the end it plays, fixed at creation: a ``CLIENT`` reads unmasked frames
and masks what it sends; a ``SERVER`` reads masked frames (an unmasked one breaks the
protocol: closed with 1002) and sends unmasked. Both roles share every other rule.

Two options serve the server: :attr:`~WebSocketConnection.invalid_text_reply`, a text message
queued before the close frame that refuses text that is not UTF-8 (1007); and
``collect_large``, with which a final text frame above
:data:`~openenv_anyio.ws.FAST_FRAME_LIMIT` is collected by the splitter in one buffer: the
transport gets :class:`LargeFrame` (nothing more is read until it calls :meth:`admit` or
:meth:`skip`, then ``receive_data(b"")``) and later :class:`LargeText` (or, for text that is
not UTF-8, :class:`Broken` with the 1007 close queued).

State (:class:`ConnectionState`), and the only transitions (:data:`TRANSITIONS`):

- ``OPEN``: messages flow both ways; pings are answered.
- ``CLOSING``: we sent a close frame; messages still arrive until the peer's close.
- ``REFUSING``: we refused an inbound message (too big, or the transport's refusal) and sent
  a close frame; inbound messages are discarded until the peer's close.
- ``CLOSED``: the peer's close arrived (echoed if we had not closed), or its bytes broke the
  protocol (our close frame queued); nothing more is read or sent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeAlias, assert_never, cast

from wsproto.frame_protocol import Frame, FrameProtocol, Opcode, ParseFailed

from ..core.close_codes import CloseCode
from .frames import encode_close_frame, encode_masked_text_frame, encode_unmasked_text_frame
from .splitter import CloseFrame, FrameSplitter, InvalidText, LargeFrame, LargeState, LargeText, SplitItem

__all__ = [
    "Broken",
    "ConnectionEvent",
    "ConnectionState",
    "LargeFrame",
    "LargeText",
    "Message",
    "PeerClosed",
    "Pong",
    "Role",
    "TRANSITIONS",
    "TooLarge",
    "WebSocketConnection",
]


class Role(enum.Enum):
    """Which end of the connection this object plays (RFC 6455 5.1: clients mask, servers do not)."""

    CLIENT = "client"
    SERVER = "server"


class ConnectionState(enum.Enum):
    OPEN = "open"
    CLOSING = "closing"
    REFUSING = "refusing"
    CLOSED = "closed"


TRANSITIONS: Final[dict[ConnectionState, frozenset[ConnectionState]]] = {
    ConnectionState.OPEN: frozenset({ConnectionState.CLOSING, ConnectionState.REFUSING, ConnectionState.CLOSED}),
    ConnectionState.CLOSING: frozenset({ConnectionState.REFUSING, ConnectionState.CLOSED}),
    ConnectionState.REFUSING: frozenset({ConnectionState.CLOSED}),
    ConnectionState.CLOSED: frozenset(),
}


# The states as module constants, read on the per-frame path (an enum member read off its
# class is a descriptor call on Python 3.11: bench/README.md, "Client CPU per step").
_OPEN: Final = ConnectionState.OPEN
_CLOSING: Final = ConnectionState.CLOSING
_REFUSING: Final = ConnectionState.REFUSING
_CLOSED: Final = ConnectionState.CLOSED
_OFFERED: Final = LargeState.OFFERED


#: A whole message is the event itself: its text (``str``) or its data (``bytes``); a class
#: pattern on ``str``/``bytes`` matches it.
Message: TypeAlias = str | bytes


@dataclass(frozen=True, slots=True)
class Pong:
    """The peer answered a ping."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class PeerClosed:
    """The peer's close frame; state is CLOSED. ``answered``: it is the peer's own close,
    answered by ours (queued now); false when it answers the close we sent."""

    code: int
    reason: str
    answered: bool


@dataclass(frozen=True, slots=True)
class TooLarge:
    """An inbound message crossed the limit: refused (state REFUSING). ``size`` is what
    arrived or what the frame header announced, whichever is larger; ``close_queued``: our
    close frame (1009) is queued now (false when we had closed before)."""

    size: int
    limit: int
    close_queued: bool


@dataclass(frozen=True, slots=True)
class Broken:
    """The peer's bytes are not RFC 6455 (our close frame is queued); state is CLOSED."""

    detail: str


#: What :meth:`WebSocketConnection.receive_data` returns (:class:`LargeFrame` and
#: :class:`LargeText` only with ``collect_large``).
ConnectionEvent: TypeAlias = Message | Pong | PeerClosed | TooLarge | Broken | LargeFrame | LargeText


#: What :meth:`WebSocketConnection.receive_data` holds back for after the messages it
#: returned (see "Replies in arrival order"): a frame of the general parser, a close frame
#: or invalid text of the splitter, or the general parser's refusal of the next bytes.
_HeldFrame: TypeAlias = Frame | CloseFrame | InvalidText | ParseFailed


def _has_message(events: list[ConnectionEvent]) -> bool:
    """Whether ``events`` holds a message (whose answer a later frame's reply must follow)."""
    return any(isinstance(event, (str, bytes, LargeText)) for event in events)


def _payload_size(data: str | bytes) -> int:
    """Bytes of ``data`` on the wire (UTF-8 for text; ASCII text is counted without encoding)."""
    if isinstance(data, str) and not data.isascii():
        return len(data.encode("utf-8", "surrogatepass"))
    return len(data)


class WebSocketConnection:
    """One end (``role``) of one WebSocket connection, without I/O (see the module doc)."""

    __slots__ = (
        "role",
        "state",
        "pings_answered",
        "invalid_text_reply",
        "has_bytes_to_send",
        "input_held",
        "send_text",
        "_limit",
        "_proto",
        "_splitter",
        "_outgoing",
        "_parts",
        "_size",
        "_masks",
        "_held_frame",
        "_held_items",
    )

    def __init__(self, role: Role = Role.CLIENT, *, max_message_size: int, collect_large: bool = False) -> None:
        self.role = role
        self.state = _OPEN
        self.pings_answered = 0
        #: a text message sent before the close frame that refuses text that is not UTF-8 (1007)
        self.invalid_text_reply: str | None = None
        self._limit = max_message_size
        self._masks = role is Role.CLIENT  # what we send is masked; what we read is masked the other way
        #: ``send_text(text)``: the frame that sends ``text`` (the transport sends only while
        #: OPEN): the role's encoder (masked for a client).
        self.send_text: Callable[[str], bytes] = encode_masked_text_frame if self._masks else encode_unmasked_text_frame
        self._proto: FrameProtocol | None = None  # the general parser, built when first needed (_general)
        self._splitter = FrameSplitter(masked=not self._masks, limit=max_message_size, collect_large=collect_large)
        self._outgoing = bytearray()
        #: whether :meth:`bytes_to_send` has something
        self.has_bytes_to_send = False
        self._parts: list[str | bytes] = []
        self._size = 0
        #: received input is held back behind the messages just returned (see "Replies in
        #: arrival order"): call ``receive_data(b"")`` once they are answered. A plain
        #: attribute, read by the transports before every socket read.
        self.input_held = False
        self._held_frame: _HeldFrame | None = None  # the frame that stopped the last call
        self._held_items: list[SplitItem] = []  # the splitter's items after it, not yet read

    def _general(self) -> FrameProtocol:
        """wsproto's frame parser and encoder for everything the fast paths do not do."""
        proto = self._proto
        if proto is None:
            proto = self._proto = FrameProtocol(client=self._masks, extensions=[])
        return proto

    def _to(self, state: ConnectionState) -> None:
        if state is not self.state:
            assert state in TRANSITIONS[self.state], f"{self.state} -> {state}"
            self.state = state

    # -- outbound ------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> bytes:
        """The frame that sends the binary message ``data`` (the transport sends only while OPEN)."""
        return bytes(self._general().send_data(data, True))

    def ping(self, payload: bytes) -> bytes:
        return bytes(self._general().ping(payload))

    def close(self, code: int, reason: str = "") -> None:
        """Start the closing handshake: a close frame is queued (OPEN -> CLOSING)."""
        if self.state is _OPEN:
            self._queue(self._general().close(code, reason or None))
            self._to(_CLOSING)

    def refuse(self, code: int, reason: str) -> None:
        """Stop taking messages and close with ``code`` (a close frame is queued unless one
        was sent already): OPEN or CLOSING -> REFUSING."""
        if self.state is _OPEN:
            self._queue(self._general().close(code, reason or None))
        if self.state is not _CLOSED:
            self._parts, self._size = [], 0
            self._to(_REFUSING)

    def admit(self) -> None:
        """Collect the large frame just reported (:class:`LargeFrame`); then ``receive_data(b"")``."""
        self._splitter.admit()

    def skip(self) -> None:
        """Drop the large frame just reported unread; then ``receive_data(b"")``."""
        self._splitter.skip()

    @property
    def large_offered(self) -> bool:
        """A :class:`LargeFrame` waits for :meth:`admit` or :meth:`skip`."""
        return self._splitter.large is _OFFERED

    def _queue(self, frame: bytes | bytearray) -> None:
        """Queue a frame that what arrived (or a close) calls for."""
        self._outgoing += frame
        self.has_bytes_to_send = True

    def bytes_to_send(self) -> bytes:
        """Control frames queued by what arrived (pongs, close frames); empties the queue."""
        data, self._outgoing = bytes(self._outgoing), bytearray()
        self.has_bytes_to_send = False
        return data

    @property
    def closed(self) -> bool:
        return self.state is _CLOSED

    # -- inbound -------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[ConnectionEvent]:
        """Take bytes read from the socket (``b""``: go on with held input); return what
        they mean, in order. Replies they call for wait in :meth:`bytes_to_send`, all for
        frames before the first message returned; :attr:`input_held` says whether more of
        what was received waits for the next call (see the module doc)."""
        events: list[ConnectionEvent] = []
        if self.state is _CLOSED:
            return events
        items = self._splitter.feed(data)
        if self.input_held:
            items = self._resume(items, events)
        for item in (rest := iter(items)):
            if type(item) is str:  # the common case: a fast text message (cannot end the connection)
                if self.state is not _REFUSING:
                    events.append(item)
                continue
            if type(item) is bytes:
                self._general().receive_bytes(item)
                self._read_general(events)
                self._refuse_announced(events)
            else:
                self._on_item(item, events)  # type: ignore[arg-type]
            if self.input_held:
                self._held_items = list(rest)
                break
            if self.closed:
                break
        return events

    def _refuse_announced(self, events: list[ConnectionEvent]) -> None:
        """Refuse a message as soon as a frame's header says it will cross the limit: its
        bytes still owed (``passthrough``) and what arrived of the message already are more
        than the limit, so no byte more needs reading (a peer that lies about the length is
        not waited for)."""
        splitter = self._splitter
        if (
            splitter.passthrough
            and splitter.general_frame_data
            and self.state is not _REFUSING
            and not self.closed
            and self._size + splitter.passthrough > self._limit
        ):
            size = max(self._size + splitter.passthrough, splitter.general_frame_length)
            close_queued = self.state is _OPEN
            self.refuse(CloseCode.MESSAGE_TOO_BIG, "message too big")
            events.append(TooLarge(size, self._limit, close_queued))

    def _hold(self, frame: _HeldFrame) -> None:
        """Stop here: ``frame`` (and all after it) is read after the messages returned are answered."""
        self._held_frame = frame
        self.input_held = True

    def _resume(self, items: list[SplitItem], events: list[ConnectionEvent]) -> list[SplitItem]:
        """Read the held frame and what the general parser holds after it; return the held
        items, then ``items`` (the bytes given now), still to be read."""
        frame, self._held_frame = self._held_frame, None
        self.input_held = False
        match frame:
            case CloseFrame() | InvalidText():
                self._on_item(frame, events)
            case ParseFailed():
                self._fail(int(frame.code), str(frame), events)
            case Frame():
                if self._on_frame(frame, events):
                    self._read_general(events)
            case None:
                pass
            case _:
                assert_never(frame)
        held, self._held_items = self._held_items, []
        if self.input_held:  # held again: what remains waits behind the new held frame
            self._held_items = held + items
            return []
        return [] if self.closed else held + items

    def _on_item(self, item: CloseFrame | LargeFrame | LargeText | InvalidText, events: list[ConnectionEvent]) -> None:
        match item:
            case CloseFrame(code, reason):
                if self.state is _OPEN and _has_message(events):
                    self._hold(item)  # its echo follows the answers to the messages before it
                else:
                    self._peer_closed(code, reason, events, read_here=True)
            case LargeFrame():
                if self.state is _REFUSING:  # discarded anyway: not offered
                    self._splitter.skip()
                    events += self.receive_data(b"")  # nothing is held while refusing (no reply is owed)
                else:
                    events.append(item)
            case LargeText():
                if self.state is not _REFUSING:
                    events.append(item)
            case InvalidText(detail):
                if self.state is _OPEN and _has_message(events):
                    self._hold(item)
                else:
                    self._fail(CloseCode.INVALID_PAYLOAD, detail, events)
            case _:
                assert_never(item)

    def _fail(self, code: int, detail: str, events: list[ConnectionEvent]) -> None:
        """The peer's bytes broke the protocol: queue our close (OPEN only), end the connection."""
        if self.state is _OPEN:
            if code == CloseCode.INVALID_PAYLOAD and self.invalid_text_reply is not None:
                self._queue(self.send_text(self.invalid_text_reply))
            self._queue(self._general().close(code, "invalid frame"))
        self._to(_CLOSED)
        events.append(Broken(detail))

    def _peer_closed(self, code: int, reason: str, events: list[ConnectionEvent], *, read_here: bool) -> None:
        """The peer's close arrived (``read_here``: a :class:`CloseFrame` of the splitter, else
        wsproto's): echoed unless we had closed (RFC 6455 5.5.1)."""
        answered = self.state is _OPEN
        if answered:
            if read_here:  # a code and a reason the splitter checked: no general parser needed
                self._queue(encode_close_frame(code, reason, masked=self._masks))
            else:
                self._queue(self._general().close(code, reason or None))
        self._to(_CLOSED)
        events.append(PeerClosed(int(code), str(reason), answered))

    def _read_general(self, events: list[ConnectionEvent]) -> None:
        """Read the frames the general parser has whole, until one is held or ends the connection."""
        try:
            for frame in self._general().received_frames():
                if not self._on_frame(frame, events):
                    return
        except ParseFailed as exc:
            if self.state is _OPEN and _has_message(events):
                self._hold(exc)
            else:
                self._fail(int(exc.code), str(exc), events)

    def _on_frame(self, frame: Frame, events: list[ConnectionEvent]) -> bool:
        """Act on one frame of the general parser; whether to read on (not when the frame
        was held or ended the connection)."""
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY or opcode is Opcode.CONTINUATION:
            if self.state is not _REFUSING and not self._on_data(frame.payload, frame.message_finished, events):  # type: ignore[arg-type]
                self._hold(frame)
                return False
        elif opcode is Opcode.PING:
            if self.state is _OPEN:
                if _has_message(events):
                    self._hold(frame)  # its pong follows the answers to the messages before it
                    return False
                self._queue(self._general().pong(frame.payload))  # type: ignore[arg-type]
                self.pings_answered += 1
        elif opcode is Opcode.PONG:
            events.append(Pong(bytes(frame.payload)))  # type: ignore[arg-type]
        elif opcode is Opcode.CLOSE:
            if self.state is _OPEN and _has_message(events):
                self._hold(frame)  # its echo follows the answers to the messages before it
                return False
            code, reason = cast(tuple[int, str], frame.payload)
            self._peer_closed(code, reason, events, read_here=False)
            return False
        return True

    def _on_data(self, data: str | bytes, finished: bool, events: list[ConnectionEvent]) -> bool:
        """Take a data frame's payload; ``False`` (nothing taken): it crosses the limit while
        a message this call returns waits for its answer (it is refused after that)."""
        size = self._size + _payload_size(data)
        if size > self._limit and self.state is _OPEN and _has_message(events):
            return False
        self._size = size
        if self._size > self._limit:
            size = max(self._size, self._splitter.general_frame_length)
            close_queued = self.state is _OPEN
            self.refuse(CloseCode.MESSAGE_TOO_BIG, "message too big")
            events.append(TooLarge(size, self._limit, close_queued))
            return True
        if not finished:
            self._parts.append(data)
            return True
        if self._parts:
            self._parts.append(data)
            data = "".join(self._parts) if isinstance(data, str) else b"".join(self._parts)  # type: ignore[arg-type]
            self._parts = []
        self._size = 0
        events.append(data)
        return True
