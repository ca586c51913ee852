"""Sans-IO WebSocket pieces shared by the client and the server (no I/O imports).

:mod:`.frames` is the one RFC 6455 fast codec of both directions; :mod:`.splitter` decides,
by its own bookkeeping of frame boundaries, which inbound bytes it decodes and which go to
the general parser (wsproto), on the client and on the server alike.
"""

from .frames import FIN_TEXT, FrameHeader, apply_mask, encode_text_frame, parse_header
from .splitter import FAST_FRAME_LIMIT, FrameSplitter

__all__ = ["FAST_FRAME_LIMIT", "FIN_TEXT", "FrameHeader", "FrameSplitter", "apply_mask", "encode_text_frame", "parse_header"]
