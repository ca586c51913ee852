"""RFC 6455 frames of the common case, encoded and decoded without a general parser.

Every request is one masked text frame from the client and (nearly always) one unmasked,
final text frame back. wsproto handles every frame in general (fragments, extensions,
incremental UTF-8, control frames) at a few microseconds a frame; these functions do the
common case of both directions directly; everything else goes to wsproto. Sans-IO and
stateless.

A client sends :func:`encode_text_frame` ``(masked=True)``, a server ``(masked=False)``;
both read with :class:`~openenv_anyio.ws.FrameSplitter`, which stands on
:func:`parse_header` and :func:`apply_mask`.
"""

from __future__ import annotations

import os
import struct
from typing import Final, NamedTuple

__all__ = ["FIN_TEXT", "FrameHeader", "apply_mask", "encode_text_frame", "parse_header"]

FIN_TEXT: Final = 0x81  # first byte of a final text frame: FIN, no RSV bits, opcode 1
_MASKED: Final = 0x80
_LEN16: Final = struct.Struct("!H")
_LEN64: Final = struct.Struct("!Q")


class FrameHeader(NamedTuple):
    first: int  # FIN, RSV1-3 and opcode
    masked: bool
    length: int  # payload length
    size: int  # header length, masking key included


def apply_mask(payload: bytes | bytearray | memoryview, key: bytes | bytearray | memoryview) -> bytes:
    """``payload`` XOR the repeated 4-byte masking ``key`` (masks and unmasks alike)."""
    n = len(payload)
    if not n:
        return b""
    mask = (bytes(key) * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(mask, "little")).to_bytes(n, "little")


def encode_text_frame(text: str, *, masked: bool) -> bytes:
    """One final text frame carrying ``text``: masked with a fresh random key (what a client
    sends, RFC 6455 5.3) or unmasked (what a server sends)."""
    payload = text.encode("utf-8")
    size = len(payload)
    flag = _MASKED if masked else 0
    if size < 126:
        header = bytes((FIN_TEXT, flag | size))
    elif size < 65536:
        header = bytes((FIN_TEXT, flag | 126)) + _LEN16.pack(size)
    else:
        header = bytes((FIN_TEXT, flag | 127)) + _LEN64.pack(size)
    if not masked:
        return header + payload
    key = os.urandom(4)
    return header + key + apply_mask(payload, key)


def parse_header(buf: bytes | bytearray, offset: int = 0) -> FrameHeader | None:
    """The header at ``buf[offset:]``, or ``None`` until all of it has arrived."""
    if len(buf) - offset < 2:
        return None
    second = buf[offset + 1]
    masked = bool(second & _MASKED)
    length = second & 0x7F
    size = 2
    if length == 126:
        if len(buf) - offset < 4:
            return None
        length, size = _LEN16.unpack_from(buf, offset + 2)[0], 4
    elif length == 127:
        if len(buf) - offset < 10:
            return None
        length, size = _LEN64.unpack_from(buf, offset + 2)[0], 10
    if masked:
        size += 4
        if len(buf) - offset < size:
            return None
    return FrameHeader(buf[offset], masked, length, size)
