"""The server-wide budget of inbound bytes in flight: large frames being read and parsed.

Theory of operation. A ``/ws`` text frame above :data:`~openenv_anyio.ws.FAST_FRAME_LIMIT`
(1 MiB) is collected whole before it is parsed, and its parse makes a second copy of it as
Python objects. Each connection's frames are bounded by the message size limit, but nothing
bounded how many such frames the server holds at once: a few clients sending 90 MiB each
could take the process's memory. So a connection reserves a large frame's size here when
its header arrives, before it reads a byte of the payload, and gives it back once the frame
is parsed (``SRV-MEM-1``). A reservation that does not fit waits, in arrival order, at most
``wait_s`` seconds (its connection reads nothing meanwhile, so TCP holds the sender back);
then the frame is refused: dropped unread and answered with ``SERVER_BUSY``. A frame larger
than the whole budget is refused at once.

Every reservation is one :class:`Waiter` in the queue until granted; the queue is served in
order (a large reservation is not overtaken by smaller ones that arrive after it). Every
change of the bytes held is reported to ``on_change`` (the ``openenv_inflight_bytes`` gauge).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

__all__ = ["InflightBytes"]


@dataclass(eq=False, slots=True)
class Waiter:
    size: int
    granted: trio.Event = field(default_factory=trio.Event)


class InflightBytes:
    """At most ``limit`` bytes reserved at once; a reservation waits at most ``wait_s``."""

    def __init__(self, limit: int, wait_s: float, on_change: Callable[[int], None] | None = None) -> None:
        if limit < 1:
            raise ValueError("the budget of bytes in flight must be positive")
        self.limit = limit
        self.wait_s = wait_s
        self._on_change = on_change
        #: bytes reserved now
        self.held = 0
        #: reservations refused since the server started (no room within ``wait_s``, or larger than the budget)
        self.refused = 0
        self._queue: collections.deque[Waiter] = collections.deque()

    def stats(self) -> dict[str, int]:
        """``bytes`` held now, reservations ``waiting``, reservations ``refused`` so far."""
        return {"bytes": self.held, "waiting": len(self._queue), "refused": self.refused}

    async def reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes; ``False`` when there was no room within ``wait_s`` (or
        ever: ``size`` exceeds the budget). Cancellation withdraws the reservation."""
        if size > self.limit:
            self.refused += 1
            return False
        if not self._queue and self.held + size <= self.limit:
            self.held += size
            self._changed()
            return True
        waiter = Waiter(size)
        self._queue.append(waiter)
        try:
            with trio.move_on_after(self.wait_s):
                await waiter.granted.wait()
        except BaseException:
            self._withdraw(waiter)
            raise
        if waiter.granted.is_set():
            return True
        self._withdraw(waiter)
        self.refused += 1
        return False

    def release(self, size: int) -> None:
        """Give back ``size`` bytes of a granted reservation."""
        self.held -= size
        assert self.held >= 0, "released more than was reserved"
        self._grant()
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.held)

    def _withdraw(self, waiter: Waiter) -> None:
        if waiter.granted.is_set():
            self.release(waiter.size)
        else:
            self._queue.remove(waiter)
            self._grant()  # the next in line may fit now

    def _grant(self) -> None:
        queue = self._queue
        while queue and self.held + queue[0].size <= self.limit:
            waiter = queue.popleft()
            self.held += waiter.size
            waiter.granted.set()
            self._changed()
