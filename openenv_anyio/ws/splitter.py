"""Which inbound bytes take the fast path and which go to the general parser (wsproto).

Theory of operation. A WebSocket connection's inbound bytes are a sequence of frames. The
common one (a whole, final, uncompressed text frame within the size limit, masked exactly
when the peer is a client) is decoded here; every other byte goes, in order and untouched,
to the general parser, which handles control frames, fragments, reserved bits, oversized
and broken frames. The splitter never looks inside the general parser: it knows where
every frame starts from its own reading of the headers, so it can tell, by its own
bookkeeping, that the general parser is between frames (:attr:`passthrough` is 0) and
between messages (:attr:`mid_message` is false) before it decodes a frame itself.

State, per connection:

- ``buffer``: bytes received and not yet handed anywhere (at most the current frame);
- ``passthrough``: bytes of the current frame still owed to the general parser (a frame
  whose header went there is streamed there, never buffered here: oversized messages are
  refused by the general parser as they arrive, not after they are buffered);
- ``mid_message``: the general parser holds the start of a fragmented data message, so a
  final text frame now would be its continuation's protocol error, not a message.

Transitions happen in :meth:`FrameSplitter.feed` only, and only at frame boundaries.
"""

from __future__ import annotations

from typing import Final

from .frames import FIN_TEXT, apply_mask, parse_header

__all__ = ["FAST_FRAME_LIMIT", "FrameSplitter"]

#: Largest payload worth decoding here: a larger frame arrives in many reads, and the general
#: parser decodes it as it arrives (faster than buffering it whole, and size-checked early).
FAST_FRAME_LIMIT: Final = 1 << 20

_DATA_OPCODES: Final = frozenset({0x0, 0x1, 0x2})
_MIN_LENGTH: Final = {2: 0, 4: 126, 10: 65536}  # header size without mask -> smallest length it may carry


class FrameSplitter:
    """Splits one direction's inbound bytes into fast text messages and general-parser bytes.

    ``masked``: whether the peer's frames are masked (a server reading a client); frames
    masked the other way go to the general parser, which refuses them. ``limit``: the
    connection's inbound message limit; payloads up to it and :data:`FAST_FRAME_LIMIT` are
    decoded here, larger ones streamed to the general parser.
    """

    __slots__ = ("buffer", "passthrough", "mid_message", "general_frame_length", "_masked", "_limit")

    def __init__(self, *, masked: bool, limit: int) -> None:
        self.buffer = bytearray()
        self.passthrough = 0
        self.mid_message = False
        #: payload length the header of the last frame handed to the general parser declared
        self.general_frame_length = 0
        self._masked = masked
        self._limit = min(limit, FAST_FRAME_LIMIT)

    def feed(self, data: bytes | bytearray) -> list[str | bytes]:
        """Take ``data``; return, in order, fast text messages (``str``) and chunks for the
        general parser (``bytes``)."""
        buf = self.buffer
        buf += data
        out: list[str | bytes] = []
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
            if (
                header.first == FIN_TEXT
                and header.masked is self._masked
                and header.length <= self._limit
                and not self.mid_message
                and header.length >= _MIN_LENGTH[header.size - 4 * header.masked]
            ):
                if len(buf) < end:
                    break
                text = self._decode(buf, header.size, end, header.masked)
                if text is not None:
                    del buf[:end]
                    out.append(text)
                    continue
            if header.first & 0x0F in _DATA_OPCODES:
                self.mid_message = not header.first & 0x80
            self.general_frame_length = header.length
            chunk = bytes(buf[:end])
            del buf[: len(chunk)]
            self.passthrough = end - len(chunk)
            out.append(chunk)
        return out

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
