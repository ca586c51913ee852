"""What our ASGI application and the Hypercorn adapter say to each other, beyond ASGI.

No Hypercorn import here: the application side (sessions, the UI endpoint) uses these names
whether or not the adapter's patches are engaged. Without them (plain ASGI), Hypercorn
refuses the extra send events with an exception the caller catches, and ignores the extra
accept key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias

__all__ = [
    "DirectHandler",
    "INVALID_TEXT_REPLY",
    "PEER_CLOSE_EVENT",
    "PING_EVENT",
    "PongProbe",
    "SEND_TIMEOUT_ATTR",
]

#: An ASGI-style ``handler(scope, receive, send)`` run in the connection's own task.
DirectHandler: TypeAlias = Callable[
    [dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]

#: Send event ``{"type": PING_EVENT, "probe": PongProbe}``: send a ping; pongs stamp the probe.
PING_EVENT: Final = "openenv.ping"
#: Send event ``{"type": PEER_CLOSE_EVENT, "callback": f}``: call ``f(code)`` when the peer's
#: own close frame arrives, before it is answered.
PEER_CLOSE_EVENT: Final = "openenv.peer_close"
#: Key of a ``websocket.accept`` message: the connection answers bytes that break RFC 6455
#: with a close frame (1002, 1007) instead of a bare TCP close (``WS-CLOSE-3``); its value is
#: the text message to send before a 1007 (text that is not UTF-8), or ``None``.
INVALID_TEXT_REPLY: Final = "openenv.invalid_text_reply"
#: Attribute of a ``hypercorn.config.Config``: seconds a socket write may make no progress.
#: Its presence also marks the config as one of our servers' (the connection guards apply
#: to those only).
SEND_TIMEOUT_ATTR: Final = "openenv_send_timeout"


class PongProbe:
    """Written by the connection when a pong arrives; read by the session."""

    __slots__ = ("last_pong",)

    def __init__(self) -> None:
        self.last_pong = float("-inf")
