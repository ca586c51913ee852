"""Sans-IO WebSocket pieces shared by the client and the server (no I/O imports).

:mod:`.frames` is the one RFC 6455 fast codec of both directions; :mod:`.splitter` decides,
by its own bookkeeping of frame boundaries, which inbound bytes it decodes and which go to
the general parser (wsproto), on the client and on the server alike; :mod:`.connection` is
one end of a connection (a client's or a server's, :class:`Role`) as a state machine, which
the client's transport and the server's ``/ws`` path (after Hypercorn's handshake) run on.
wsproto is imported here and in the server's Hypercorn adapter only.
"""

from wsproto.utilities import generate_accept_token, generate_nonce

from .connection import (
    TRANSITIONS,
    Broken,
    ConnectionEvent,
    ConnectionState,
    Message,
    PeerClosed,
    Pong,
    Role,
    TooLarge,
    WebSocketConnection,
)
from .frames import FIN_CLOSE, FIN_TEXT, FrameHeader, apply_mask, encode_close_frame, encode_text_frame, parse_header
from .splitter import (
    FAST_FRAME_LIMIT,
    LARGE_TRANSITIONS,
    CloseFrame,
    FrameSplitter,
    InvalidText,
    LargeFrame,
    LargeState,
    LargeText,
    SplitItem,
)

__all__ = [
    "TRANSITIONS",
    "Broken",
    "ConnectionEvent",
    "ConnectionState",
    "Message",
    "PeerClosed",
    "Pong",
    "Role",
    "TooLarge",
    "WebSocketConnection",
    "FAST_FRAME_LIMIT",
    "CloseFrame",
    "LARGE_TRANSITIONS",
    "InvalidText",
    "LargeFrame",
    "LargeState",
    "LargeText",
    "SplitItem",
    "generate_accept_token",
    "generate_nonce",
    "FIN_CLOSE",
    "FIN_TEXT",
    "FrameHeader",
    "FrameSplitter",
    "apply_mask",
    "encode_close_frame",
    "encode_text_frame",
    "parse_header",
]
