"""When to ping a quiet connection and when to give up on it (``WS-PING-1``).

The pings go out, and the pongs come back, through the Hypercorn adapter's send event
(:data:`~.hypercorn_adapter.events.PING_EVENT`); served without it (plain ASGI), the first
ping is refused and the schedule stops pinging.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .hypercorn_adapter.events import PING_EVENT, PongProbe

__all__ = ["PingSchedule"]


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
