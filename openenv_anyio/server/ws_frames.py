"""The few WebSocket frames the ``/ws`` fast path handles itself (RFC 6455, sans-IO).

Only the common case: a whole, unfragmented, masked text frame from a client, and an
unfragmented text frame to it. Everything else (control frames, fragments, reserved bits,
compressed or oversized messages, bad UTF-8) is left to wsproto by the caller.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FIN_TEXT", "FrameHeader", "parse_header", "text_frame", "unmask"]

FIN_TEXT = 0x81  # first byte of a final text frame with no reserved bits set


class FrameHeader(NamedTuple):
    first: int  # FIN, RSV1-3 and opcode
    masked: bool
    length: int  # payload length
    size: int  # header length, mask key included


def parse_header(buf: bytes | bytearray) -> FrameHeader | None:
    """The header at the start of ``buf``, or ``None`` until all of it has arrived."""
    if len(buf) < 2:
        return None
    second = buf[1]
    masked = bool(second & 0x80)
    length = second & 0x7F
    size = 2
    if length == 126:
        if len(buf) < 4:
            return None
        length, size = int.from_bytes(buf[2:4], "big"), 4
    elif length == 127:
        if len(buf) < 10:
            return None
        length, size = int.from_bytes(buf[2:10], "big"), 10
    if masked:
        size += 4
        if len(buf) < size:
            return None
    return FrameHeader(buf[0], masked, length, size)


def unmask(payload: bytes | bytearray | memoryview, key: bytes | bytearray | memoryview) -> bytes:
    """``payload`` XOR the repeated 4-byte masking ``key``."""
    n = len(payload)
    if not n:
        return b""
    mask = (bytes(key) * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(mask, "little")).to_bytes(n, "little")


def text_frame(text: str) -> bytes:
    """A final, unmasked text frame carrying ``text`` (what a server sends)."""
    payload = text.encode()
    n = len(payload)
    if n < 126:
        return bytes((FIN_TEXT, n)) + payload
    if n < 65536:
        return b"\x81\x7e" + n.to_bytes(2, "big") + payload
    return b"\x81\x7f" + n.to_bytes(8, "big") + payload
