"""Which inbound bytes take the fast path and which go to the general parser (wsproto).

Theory of operation. A WebSocket connection's inbound bytes are a sequence of frames. The
common one (a whole, final, uncompressed text frame within the size limit, masked exactly
when the peer is a client) is decoded here; every other byte goes, in order and untouched,
to the general parser, which handles control frames, fragments, reserved bits, oversized
and broken frames. The splitter never looks inside the general parser: it knows where
every frame starts from its own reading of the headers, so it can tell, by its own
bookkeeping, that the general parser is between frames (:attr:`passthrough` is 0) and
between messages (:attr:`mid_message` is false) before it decodes a frame itself.

The peer's close frame is read here too when nothing in it needs checking beyond its
shape: a whole close frame, masked as expected, whose payload is a code every peer may send
(1000, 1001, or 3000-4999) and a UTF-8 reason; it becomes :class:`CloseFrame`. Every other
close frame (no code, a code reserved or unknown, a reason that is not UTF-8) goes to the
general parser, which refuses what it must. So a connection that only ever exchanges text
messages and closes normally never needs the general parser at all.

State, per connection:

- ``buffer``: bytes received and not yet handed anywhere (at most the current frame);
- ``passthrough``: bytes of the current frame still owed to the general parser (a frame
  whose header went there is streamed there, never buffered here: oversized messages are
  refused by the general parser as they arrive, not after they are buffered);
- ``mid_message``: the general parser holds the start of a fragmented data message, so a
  final text frame now would be its continuation's protocol error, not a message.

Transitions happen in :meth:`FrameSplitter.feed` only, and only at frame boundaries.

Large text frames (a splitter made with ``collect_large``: the server). A final text frame
above :data:`FAST_FRAME_LIMIT` and within the limit is not streamed to the general parser,
which would hand it on as pieces of text to be joined (a copy or two of the whole message in
``str``): the splitter collects its payload itself into one buffer of the announced size,
unmasking and checking UTF-8 as the bytes arrive, so the whole message is never copied and a
text that is not UTF-8 is known at its first bad byte. Its own state, :attr:`large`
(:class:`LargeState`, transitions in :data:`LARGE_TRANSITIONS`):

- ``NONE``: no large frame under way;
- ``OFFERED``: a large frame's header is at the head of ``buffer`` and :class:`LargeFrame` was
  returned (and is returned again by every ``feed`` until then); nothing more is read until
  the transport calls :meth:`FrameSplitter.admit` (it has room for the message) or
  :meth:`FrameSplitter.skip` (it has not), then ``feed(b"")``;
- ``COLLECTING``: the payload goes into the message's buffer; at its end a
  :class:`LargeText` is returned (back to ``NONE``), or at its first byte that is not UTF-8 an
  :class:`InvalidText` (then ``SKIPPING``);
- ``SKIPPING``: the rest of the payload is read and dropped (back to ``NONE`` at its end).
"""

from __future__ import annotations

import codecs
import enum
from dataclasses import dataclass
from typing import Final, TypeAlias

from .frames import FIN_CLOSE, FIN_TEXT, FrameHeader, apply_mask, parse_header

__all__ = [
    "CloseFrame",
    "FAST_FRAME_LIMIT",
    "FrameSplitter",
    "InvalidText",
    "LARGE_TRANSITIONS",
    "LargeFrame",
    "LargeState",
    "LargeText",
    "SplitItem",
]

#: Largest payload worth decoding here: a larger frame arrives in many reads, and the general
#: parser decodes it as it arrives (faster than buffering it whole, and size-checked early).
FAST_FRAME_LIMIT: Final = 1 << 20

_DATA_OPCODES: Final = frozenset({0x0, 0x1, 0x2})
_MASK_BIT: Final = 0x80
_SHORT_LENGTH: Final = 125  # the largest payload length the header's 7 bits carry themselves
_PLAIN_CLOSE_CODES: Final = frozenset({1000, 1001})  # with 3000-4999: codes read here (RFC 6455 7.4)


class LargeState(enum.Enum):
    NONE = "none"
    OFFERED = "offered"
    COLLECTING = "collecting"
    SKIPPING = "skipping"


LARGE_TRANSITIONS: Final[dict[LargeState, frozenset[LargeState]]] = {
    LargeState.NONE: frozenset({LargeState.OFFERED}),
    LargeState.OFFERED: frozenset({LargeState.COLLECTING, LargeState.SKIPPING}),
    LargeState.COLLECTING: frozenset({LargeState.NONE, LargeState.SKIPPING}),
    LargeState.SKIPPING: frozenset({LargeState.NONE}),
}


# The states as module constants, read on the per-frame path (an enum member read off its
# class is a descriptor call on Python 3.11: bench/README.md, "Client CPU per step").
_NO_LARGE: Final = LargeState.NONE
_OFFERED: Final = LargeState.OFFERED
_COLLECTING: Final = LargeState.COLLECTING
_SKIPPING: Final = LargeState.SKIPPING


@dataclass(frozen=True, slots=True)
class LargeFrame:
    """A large text frame's header arrived: :meth:`FrameSplitter.admit` or :meth:`~FrameSplitter.skip` it."""

    size: int  # payload bytes the header announces


@dataclass(frozen=True, slots=True)
class LargeText:
    """The whole payload of an admitted large text frame: UTF-8, unmasked, one buffer."""

    data: bytearray


@dataclass(frozen=True, slots=True)
class CloseFrame:
    """The peer's close frame, read here (see the module doc): its code and reason are valid."""

    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class InvalidText:
    """An admitted large text frame is not UTF-8 (RFC 6455 8.1: fail the connection, 1007)."""

    detail: str


#: What :meth:`FrameSplitter.feed` returns, in order: fast text messages (``str``), chunks
#: for the general parser (``bytes``), the peer's plain close (:class:`CloseFrame`) and the
#: large-frame items.
SplitItem: TypeAlias = str | bytes | CloseFrame | LargeFrame | LargeText | InvalidText


class FrameSplitter:
    """Splits one direction's inbound bytes into fast text messages and general-parser bytes.

    ``masked``: whether the peer's frames are masked (a server reading a client); frames
    masked the other way go to the general parser, which refuses them. ``limit``: the
    connection's inbound message limit; payloads up to it and :data:`FAST_FRAME_LIMIT` are
    decoded here, larger ones streamed to the general parser, or with ``collect_large``, larger
    final text frames within ``limit`` collected here (see the module doc).
    """

    __slots__ = (
        "buffer",
        "passthrough",
        "mid_message",
        "general_frame_length",
        "general_frame_data",
        "large",
        "_masked",
        "_mask_bit",
        "_limit",
        "_large_limit",
        "_offer",
        "_message",
        "_size",
        "_filled",
        "_key",
        "_utf8",
    )

    def __init__(self, *, masked: bool, limit: int, collect_large: bool = False) -> None:
        self.buffer = bytearray()
        self.passthrough = 0
        self.mid_message = False
        #: payload length the header of the last frame handed to the general parser declared
        self.general_frame_length = 0
        #: whether that frame is a data frame (text, binary or a continuation)
        self.general_frame_data = False
        self.large = _NO_LARGE
        self._masked = masked
        self._mask_bit = _MASK_BIT if masked else 0  # the MASK bit of the second header byte, as expected
        self._limit = min(limit, FAST_FRAME_LIMIT)
        self._large_limit = limit if collect_large else 0
        self._offer: FrameHeader | None = None  # the offered large frame's header
        self._message: bytearray | None = None  # the large message being collected
        self._size = 0  # the payload size of the large frame under way
        self._filled = 0  # its payload bytes read so far
        self._key = b""  # its masking key
        self._utf8: codecs.IncrementalDecoder | None = None

    def feed(self, data: bytes | bytearray) -> list[SplitItem]:
        """Take ``data``; return, in order, fast text messages (``str``), chunks for the
        general parser (``bytes``) and the large-frame items (:data:`SplitItem`)."""
        buf = self.buffer
        out: list[SplitItem] = []
        if buf or self.passthrough or self.large is not _NO_LARGE:
            buf += data
        else:  # the usual read: nothing waits here, so its whole fast frames are read in place
            taken = self._fast_frames(data, out)
            if taken == len(data):
                return out
            buf += memoryview(data)[taken:]  # only what is left is copied
        if self.large is not _NO_LARGE and not self._feed_large(out):
            return out
        while buf:
            if self.passthrough:
                chunk = bytes(buf[: self.passthrough])
                del buf[: len(chunk)]
                self.passthrough -= len(chunk)
                out.append(chunk)
                continue
            header = parse_header(buf)
            if header is None:
                break
            end = header.size + header.length
            if self._fast_payload(buf, 0) is not None:
                if len(buf) < end:
                    break
                text = self._decode(buf, header.size, end, header.masked)
                if text is not None:
                    del buf[:end]
                    out.append(text)
                    continue
            elif (
                header.first == FIN_CLOSE
                and header.masked is self._masked
                and 2 <= header.length <= _SHORT_LENGTH
                and header.size == (6 if header.masked else 2)  # the length in its 7 bits, as it must be
            ):
                if len(buf) < end:
                    break
                close = self._decode_close(buf, header.size, end, header.masked)
                if close is not None:
                    del buf[:end]
                    out.append(close)
                    continue
            if (
                FAST_FRAME_LIMIT < header.length <= self._large_limit
                and header.first == FIN_TEXT
                and header.masked is self._masked
                and not self.mid_message
            ):
                self._to(_OFFERED)
                self._offer = header
                out.append(LargeFrame(header.length))
                break
            data_frame = header.first & 0x0F in _DATA_OPCODES
            if data_frame:
                self.mid_message = not header.first & 0x80
            self.general_frame_data = data_frame
            self.general_frame_length = header.length
            chunk = bytes(buf[:end])
            del buf[: len(chunk)]
            self.passthrough = end - len(chunk)
            out.append(chunk)
        return out

    def _fast_payload(self, data: bytes | bytearray, pos: int) -> tuple[int, int] | None:
        """Where the payload of the frame at ``data[pos:]`` lies, ``(start, end)``, when it is
        decoded here: a final text frame, masked as expected, within the fast limit, minimally
        encoded, and not inside a fragmented message; else (or while its header is incomplete)
        None. Reads the header's bytes itself, without a :class:`FrameHeader`
        (bench/README.md, "Client CPU per step")."""
        size = len(data) - pos
        if size < 2 or self.mid_message or data[pos] != FIN_TEXT:
            return None
        second = data[pos + 1]
        if second & _MASK_BIT != self._mask_bit:
            return None
        length = second & 0x7F
        start = pos + 2
        if length == 126:
            if size < 4:
                return None
            length = data[pos + 2] << 8 | data[pos + 3]
            if length <= _SHORT_LENGTH:
                return None
            start = pos + 4
        elif length == 127:
            if size < 10:
                return None
            length = int.from_bytes(data[pos + 2 : pos + 10], "big")
            if length <= 0xFFFF:
                return None
            start = pos + 10
        if length > self._limit:
            return None
        if self._mask_bit:
            start += 4
        return start, start + length

    def _fast_frames(self, data: bytes | bytearray, out: list[SplitItem]) -> int:
        """Decode the whole fast frames at the start of ``data`` into ``out`` (``data`` is
        read, not kept); return how many bytes they took. Stops at the first frame that is
        not one (or not whole): the rest goes through the buffer."""
        size = len(data)
        pos = 0
        while pos < size and (payload := self._fast_payload(data, pos)) is not None:
            start, end = payload
            if size < end:
                break
            try:  # bytes.decode() with no argument is UTF-8
                if self._mask_bit:  # the body is a copy: small (the fast limit), and nothing holds data
                    text = apply_mask(data[start:end], data[start - 4 : start]).decode()
                else:
                    text = data[start:end].decode()
            except UnicodeDecodeError:
                break  # the general parser refuses it (1007)
            out.append(text)
            pos = end
        return pos

    @staticmethod
    def _decode(buf: bytearray, start: int, end: int, masked: bool) -> str | None:
        """The UTF-8 text of the payload ``buf[start:end]`` (unmasked), or None when it is not
        UTF-8 (the general parser then refuses it with 1007). Leaves no view on ``buf``."""
        with memoryview(buf) as view:
            body = view[start:end]
            try:
                if masked:
                    return str(apply_mask(body, view[start - 4 : start]), "utf-8")
                return str(body, "utf-8")
            except UnicodeDecodeError:
                return None
            finally:
                body.release()

    @staticmethod
    def _decode_close(buf: bytearray, start: int, end: int, masked: bool) -> CloseFrame | None:
        """The close frame ``buf[start:end]`` carries, when its code and reason need no
        checking by the general parser (see the module doc); else None."""
        with memoryview(buf) as view:
            body = view[start:end]
            try:
                payload = apply_mask(body, view[start - 4 : start]) if masked else bytes(body)
            finally:
                body.release()
        code = payload[0] << 8 | payload[1]
        if code not in _PLAIN_CLOSE_CODES and not 3000 <= code <= 4999:
            return None
        try:
            return CloseFrame(code, payload[2:].decode())
        except UnicodeDecodeError:
            return None

    # -- large text frames (collect_large) ----------------------------------------------

    def _to(self, state: LargeState) -> None:
        assert state in LARGE_TRANSITIONS[self.large], f"{self.large} -> {state}"
        self.large = state

    def admit(self) -> None:
        """Collect the offered large frame (OFFERED -> COLLECTING); then ``feed(b"")``."""
        self._take_offer(_COLLECTING)
        self._message = bytearray()  # grows as the bytes arrive (zero-filling it whole would stall)

    def skip(self) -> None:
        """Drop the offered large frame unread (OFFERED -> SKIPPING); then ``feed(b"")``."""
        self._take_offer(_SKIPPING)

    def _take_offer(self, state: LargeState) -> FrameHeader:
        header = self._offer
        assert header is not None and self.large is _OFFERED, "no large frame offered"
        self._to(state)
        self._offer = None
        self._key = bytes(self.buffer[header.size - 4 : header.size]) if header.masked else b""
        del self.buffer[: header.size]
        self._size, self._filled, self._message = header.length, 0, None
        self._utf8 = codecs.getincrementaldecoder("utf-8")() if state is _COLLECTING else None
        return header

    def _feed_large(self, out: list[SplitItem]) -> bool:
        """Take what ``buffer`` holds of the large frame under way; whether the frame ended
        (the caller goes on with the bytes after it)."""
        if self.large is _OFFERED:  # still waiting for admit() or skip(): ask again
            assert self._offer is not None
            out.append(LargeFrame(self._offer.length))
            return False
        buf, size, start = self.buffer, self._size, self._filled
        take = min(size - start, len(buf))
        message, utf8 = self._message, self._utf8
        if message is not None and utf8 is not None:  # COLLECTING
            with memoryview(buf) as view, view[:take] as chunk:
                key = self._key
                plain = apply_mask(chunk, key[start % 4 :] + key[: start % 4]) if key else bytes(chunk)
            try:
                utf8.decode(plain, start + take == size)
            except UnicodeDecodeError as exc:
                self._to(_SKIPPING)
                self._message = self._utf8 = None
                out.append(InvalidText(f"a text message is not UTF-8: {exc.reason}"))
            else:
                message += plain
        del buf[:take]
        self._filled = start + take
        if self._filled < size:
            return False
        if self._message is not None:
            out.append(LargeText(self._message))
        self._message = self._utf8 = None
        self._to(_NO_LARGE)
        return True
