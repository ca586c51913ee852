"""What our ASGI application and the Hypercorn adapter say to each other, beyond ASGI.

No Hypercorn import here: the application side (sessions, the UI endpoint) uses these names
whether or not the adapter's patches are engaged. Without them (plain ASGI), Hypercorn
refuses the extra send events with an exception the caller catches, and ignores the extra
accept key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TypeAlias

__all__ = [
    "DirectHandler",
    "HELD_TEXT",
    "HeldText",
    "INFLIGHT_BUDGET_ATTR",
    "INVALID_TEXT_REPLY",
    "InflightBudget",
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
#: Attribute of a ``hypercorn.config.Config``: the server's :class:`InflightBudget`. With it,
#: direct streams collect large text messages themselves (above
#: :data:`~openenv_anyio.ws.FAST_FRAME_LIMIT`, one buffer, no ``str`` of the whole message)
#: and hand them to the application as :data:`HELD_TEXT`.
INFLIGHT_BUDGET_ATTR: Final = "openenv_inflight_budget"
#: Key of a ``websocket.receive`` message (``text`` and ``bytes`` both ``None``) of a direct
#: stream: a large text message, a :class:`HeldText`.
HELD_TEXT: Final = "openenv.held_text"


class InflightBudget(Protocol):
    """The server-wide bound on bytes of large messages being read and parsed (``SRV-MEM-1``)."""

    async def reserve(self, size: int) -> bool:
        """Wait (bounded) for room for ``size`` bytes; ``False``: none, refuse the message."""
        ...

    def release(self, size: int) -> None: ...


class HeldText:
    """A large text message as its UTF-8 bytes (checked), holding ``size`` bytes of the
    budget until :meth:`release`; ``data`` is ``None`` when the budget had no room for it
    (the message was dropped unread). Whoever takes it from ``receive()`` releases it."""

    __slots__ = ("data", "size", "_budget")

    def __init__(self, data: bytearray | None, size: int, budget: InflightBudget | None) -> None:
        self.data = data
        self.size = size
        self._budget = budget

    def release(self) -> None:
        """Drop the bytes and give their room back (once; later calls do nothing)."""
        budget, self._budget, self.data = self._budget, None, None
        if budget is not None:
            budget.release(self.size)


class PongProbe:
    """Written by the connection when a pong arrives; read by the session."""

    __slots__ = ("last_pong",)

    def __init__(self) -> None:
        self.last_pong = float("-inf")
