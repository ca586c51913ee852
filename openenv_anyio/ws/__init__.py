"""Sans-IO WebSocket pieces shared by the client and the server (no I/O imports).

:mod:`.frames` is the one RFC 6455 fast codec of both directions; wsproto does everything
else.
"""

from .frames import FIN_TEXT, FrameHeader, apply_mask, encode_text_frame, parse_header, split_text_frame

__all__ = ["FIN_TEXT", "FrameHeader", "apply_mask", "encode_text_frame", "parse_header", "split_text_frame"]
