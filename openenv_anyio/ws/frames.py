"""RFC 6455 frames of the common case, encoded and decoded without a general parser.

Every request is one masked text frame from the client and (nearly always) one unmasked,
final text frame back. wsproto handles every frame in general (fragments, extensions,
incremental UTF-8, control frames) through a general parser; these functions do the
common case of both directions directly; everything else goes to wsproto. Sans-IO and
stateless but for a pool of unused masking keys (see ``_keys``).

A peer's close frame with a code and a reason that need no checking (see
:class:`~openenv_anyio.ws.FrameSplitter`) is read here too and answered with
:func:`encode_close_frame`.

A client sends :func:`encode_masked_text_frame`, a server :func:`encode_unmasked_text_frame`
(:func:`encode_text_frame` picks one by ``masked``); both read with
:class:`~openenv_anyio.ws.FrameSplitter`, which stands on :func:`parse_header` and
:func:`apply_mask`.
"""

from __future__ import annotations

import os
import struct
from typing import Final, NamedTuple

__all__ = [
    "FIN_CLOSE",
    "FIN_TEXT",
    "FrameHeader",
    "apply_mask",
    "encode_close_frame",
    "encode_masked_text_frame",
    "encode_text_frame",
    "encode_unmasked_text_frame",
    "parse_header",
]

FIN_TEXT: Final = 0x81  # first byte of a final text frame: FIN, no RSV bits, opcode 1
FIN_CLOSE: Final = 0x88  # first byte of a close frame: FIN, no RSV bits, opcode 8
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
    return encode_masked_text_frame(text) if masked else encode_unmasked_text_frame(text)


def encode_unmasked_text_frame(text: str) -> bytes:
    """One final, unmasked text frame carrying ``text`` (a server's frame)."""
    payload = text.encode()
    size = len(payload)
    if size < 126:
        return _HEADERS[size] + payload
    return _long_header(0, size) + payload


def encode_masked_text_frame(text: str) -> bytes:
    """One final text frame carrying ``text``, masked with a fresh random key (a client's frame)."""
    payload = text.encode()
    size = len(payload)
    key = _fresh_key()
    header = _MASKED_HEADERS[size] if size < 126 else _long_header(_MASKED, size)
    return header + key + apply_mask(payload, key)


def encode_close_frame(code: int, reason: str, *, masked: bool) -> bytes:
    """A close frame carrying ``code`` and ``reason`` (at most 123 bytes of UTF-8, RFC 6455
    5.5), masked with a fresh random key or unmasked: the answer to the peer's close."""
    payload = code.to_bytes(2, "big") + reason.encode()
    size = len(payload)
    if size > 125:
        raise ValueError(f"a close frame's payload is at most 125 bytes, not {size}")
    if not masked:
        return bytes((FIN_CLOSE, size)) + payload
    key = _fresh_key()
    return bytes((FIN_CLOSE, _MASKED | size)) + key + apply_mask(payload, key)


def _long_header(flag: int, size: int) -> bytes:
    if size < 65536:
        return bytes((FIN_TEXT, flag | 126)) + _LEN16.pack(size)
    return bytes((FIN_TEXT, flag | 127)) + _LEN64.pack(size)


#: Headers of final text frames with a payload under 126 bytes, by payload length.
_HEADERS: Final = tuple(bytes((FIN_TEXT, size)) for size in range(126))
_MASKED_HEADERS: Final = tuple(bytes((FIN_TEXT, _MASKED | size)) for size in range(126))

# Masking keys, drawn from the operating system's CSPRNG (RFC 6455 5.3: a strong source of
# entropy) a block at a time rather than one system call per frame (bench/README.md, "Client
# CPU per step"); each key is used once.
# A forked child drops the parent's unused keys, so the two never send the same ones.
_KEY_BLOCK: Final = 1024  # keys per draw
_keys: list[bytes] = []


def _fresh_key() -> bytes:
    """A masking key no frame has used."""
    return _keys.pop() if _keys else _refill_keys()


def _refill_keys() -> bytes:
    """Draw a new block of keys; return one of them."""
    block = os.urandom(4 * _KEY_BLOCK)
    _keys[:] = [block[i : i + 4] for i in range(4, len(block), 4)]
    return block[:4]


os.register_at_fork(after_in_child=_keys.clear)


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
