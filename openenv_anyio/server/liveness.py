"""WebSocket pings whose pongs the application can see (``WS-PING-1``).

ASGI has no ping message, and Hypercorn's own ``websocket_ping_interval`` sends pings but
ignores the pongs, so a half-open peer (gone without a close, its TCP still up or silent) is
never noticed. This module teaches Hypercorn's WebSocket stream one extra ASGI send event,
``{"type": "openenv.ping", "probe": PongProbe}``: the stream sends a ping, and every pong it
receives afterwards stamps ``probe.last_pong`` with the trio clock. Streams of applications
that never send the event behave exactly as before.

:func:`install` swaps the stream class Hypercorn's HTTP/1.1 and HTTP/2 protocols build
(idempotent; the subclass only adds behaviour).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio
from hypercorn.protocol import h2 as _h2
from hypercorn.protocol import h11 as _h11
from hypercorn.protocol.ws_stream import ASGIWebsocketState, WSStream
from wsproto.events import Event, Ping, Pong

__all__ = ["PING_EVENT", "PingSchedule", "PongProbe", "install"]

PING_EVENT = "openenv.ping"


class PongProbe:
    """Written by the connection when a pong arrives; read by the session."""

    __slots__ = ("last_pong",)

    def __init__(self) -> None:
        self.last_pong = float("-inf")


class _PongTap:
    """Wraps a wsproto connection: passes every event on, stamps the probe on pongs."""

    __slots__ = ("_connection", "_stream")

    def __init__(self, connection: Any, stream: _ProbingWSStream) -> None:
        self._connection = connection
        self._stream = stream

    def events(self) -> Iterator[Event]:
        for event in self._connection.events():
            if isinstance(event, Pong) and self._stream.probe is not None:
                self._stream.probe.last_pong = trio.current_time()
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class _ProbingWSStream(WSStream):
    probe: PongProbe | None = None

    async def _accept(self, message: Any) -> None:
        await super()._accept(message)
        self.connection = _PongTap(self.connection, self)  # type: ignore[assignment]

    async def app_send(self, message: Any) -> None:
        if message is not None and message.get("type") == PING_EVENT:
            if not self.closed and self.state == ASGIWebsocketState.CONNECTED:
                self.probe = message["probe"]
                await self._send_wsproto_event(Ping(payload=b"openenv"))
            return
        await super().app_send(message)


def install() -> None:
    """Make Hypercorn build WebSocket streams that understand ``openenv.ping``."""
    _h11.WSStream = _ProbingWSStream  # type: ignore[misc]
    _h2.WSStream = _ProbingWSStream  # type: ignore[misc]


class PingSchedule:
    """When to ping a quiet connection and when to give up on it (``WS-PING-1``).

    The owner waits for inbound messages with :meth:`deadline` as the deadline, calls
    :meth:`heard` on every inbound message, and :meth:`on_deadline` when the wait timed out;
    ``on_deadline`` returns ``False`` once the peer has missed its pong.
    """

    __slots__ = ("interval", "timeout", "probe", "due", "sent_at")

    def __init__(self, interval: float | None, timeout: float | None) -> None:
        self.interval = interval or math.inf
        self.timeout = timeout or math.inf
        self.probe: PongProbe | None = PongProbe() if self.interval < math.inf else None
        self.due = trio.current_time() + self.interval
        self.sent_at: float | None = None

    def deadline(self) -> float:
        return self.due if self.sent_at is None else self.sent_at + self.timeout

    def heard(self, now: float) -> None:
        """Inbound traffic proves the peer alive: next ping one interval from now."""
        self.sent_at, self.due = None, now + self.interval

    async def on_deadline(self, send: Callable[[dict[str, Any]], Awaitable[None]], now: float) -> bool:
        """Ping if due, or judge the pong; ``False`` when the peer is gone."""
        probe = self.probe
        if probe is None:
            return True
        if self.sent_at is None:
            if now >= self.due:
                try:
                    await send({"type": PING_EVENT, "probe": probe})
                    self.sent_at = now
                except Exception:  # the ASGI server cannot ping: stop trying
                    self.probe, self.due = None, math.inf
            return True
        if probe.last_pong >= self.sent_at:
            self.heard(probe.last_pong)
            return True
        return now < self.sent_at + self.timeout
