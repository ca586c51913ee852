"""A cheaper keep-alive timer for Hypercorn's trio connections (a patch of its worker).

Every connection Hypercorn's trio worker serves restarts an idle timer when it opens and
stops it when a request arrives. Its ``TrioSingleTask`` starts the timer task with
``nursery.start`` under a lock, which parks the connection until the new task has run:
two extra passes of the scheduler and a lock per restart, measured at about a tenth of a
WebSocket connection's server CPU. :class:`KeepAliveTimer` does the same job with
``start_soon`` and a cancel scope made up front, so nothing waits: a timer cancelled before
its task first runs enters an already-cancelled scope and ends at once.
:data:`PATCHES` makes Hypercorn's trio TCP server use it (for every connection opened while
one of our servers runs: it only does the same job for less).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .inventory import Patch

__all__ = ["KeepAliveTimer", "PATCHES"]


async def _run_within(scope: trio.CancelScope, action: Callable[[], Awaitable[None]]) -> None:
    with scope:
        await action()


class KeepAliveTimer:
    """At most one running timer task per connection; restarting cancels the previous one."""

    __slots__ = ("_scope",)

    def __init__(self) -> None:
        self._scope: trio.CancelScope | None = None

    async def restart(self, task_group: Any, action: Callable[[], Awaitable[None]]) -> None:
        if self._scope is not None:
            self._scope.cancel()
        scope = self._scope = trio.CancelScope()
        task_group._nursery.start_soon(_run_within, scope, action)

    async def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None


PATCHES = (
    Patch(
        "hypercorn.trio.tcp_server:TrioSingleTask",
        lambda original: KeepAliveTimer,
        "idle timers started without parking the connection (about a tenth of its CPU)",
    ),
)
