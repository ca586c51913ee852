"""The two WebSocket frames of every request, encoded and decoded without wsproto's machinery.

A client request is one masked text frame out and (nearly always) one unmasked, final text
frame in. wsproto handles every frame in general (fragments, extensions, incremental
UTF-8, control frames) at a few microseconds a frame; these functions do the common case
directly and say when they cannot, so the transport hands everything else to wsproto.
Sans-IO and stateless: the transport calls :func:`split_text_frame` only while wsproto
holds no partial frame or message, so the two never disagree about where a frame starts.
"""

from __future__ import annotations

import os
import struct
from typing import Final

__all__ = ["encode_text_frame", "split_text_frame"]

_FIN_TEXT: Final = 0x81  # FIN bit, no RSV bits, opcode 1 (text)
_MASKED: Final = 0x80
_LEN16: Final = struct.Struct("!H")
_LEN64: Final = struct.Struct("!Q")


def encode_text_frame(text: str) -> bytes:
    """One final, masked text frame carrying ``text`` (RFC 6455 section 5.2, a client's frame)."""
    payload = text.encode("utf-8")
    size = len(payload)
    if size < 126:
        header = bytes((_FIN_TEXT, _MASKED | size))
    elif size < 65536:
        header = bytes((_FIN_TEXT, _MASKED | 126)) + _LEN16.pack(size)
    else:
        header = bytes((_FIN_TEXT, _MASKED | 127)) + _LEN64.pack(size)
    mask = os.urandom(4)
    if not size:
        return header + mask
    key = (mask * (size // 4 + 1))[:size]
    masked = (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(size, "little")
    return header + mask + masked


def split_text_frame(data: bytes, limit: int) -> tuple[str, int] | None:
    """``(text, frame_length)`` when ``data`` starts with one whole, final, unmasked text frame
    of at most ``limit`` bytes whose payload is valid UTF-8 and whose length is encoded
    minimally; otherwise None (let the general parser decide: it may be a fragment, a
    control frame, an incomplete frame, or something to refuse).
    """
    if len(data) < 2 or data[0] != _FIN_TEXT:
        return None
    size = data[1]
    if size & _MASKED:
        return None
    start = 2
    if size == 126:
        if len(data) < 4:
            return None
        size = _LEN16.unpack_from(data, 2)[0]
        if size < 126:
            return None
        start = 4
    elif size == 127:
        if len(data) < 10:
            return None
        size = _LEN64.unpack_from(data, 2)[0]
        if size < 65536:
            return None
        start = 10
    end = start + size
    if size > limit or len(data) < end:
        return None
    try:
        text = str(memoryview(data)[start:end], "utf-8")
    except UnicodeDecodeError:
        return None
    return text, end
