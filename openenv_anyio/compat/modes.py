"""Which calling mode a compat client is locked to, and the only ways that lock may change.

Theory of operation. Upstream's client runs the same ``reset`` / ``step`` / ``state`` /
``close`` either awaited on the caller's event loop or blocking on an event loop of its own
(in a thread), and a connection lives on one loop only. So a client is locked to the first
mode it is used in (:class:`ExecutionMode`); using it the other way afterwards raises
:class:`ModeMixed` (upstream's message, a ``RuntimeError``), except for one hand-over:
a client whose async use ended with its event loop (``asyncio.run`` returned) may be used
synchronously afterwards, on a new session.

Transitions (:data:`TRANSITIONS`), by what the caller asks for:

- ``UNCLAIMED`` -> ``SYNC`` or ``ASYNC``: the first use claims its mode.
- ``ASYNC`` -> ``SYNC``: only as the hand-over above (``handover=True``).
- any mode -> the same mode: nothing changes.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["ExecutionMode", "ModeMixed", "TRANSITIONS", "claim"]


class ExecutionMode(enum.Enum):
    UNCLAIMED = "unclaimed"
    SYNC = "sync"
    ASYNC = "async"


class ModeMixed(RuntimeError):
    """A client locked to one calling mode was used in the other (upstream raises the same)."""

    def __init__(self, current: ExecutionMode) -> None:
        super().__init__(
            f"EnvClient is already being used in {current.value} mode. "
            "Create a separate client instance when mixing sync and async code."
        )
        self.current = current


#: (from, to) -> allowed without a hand-over; (ASYNC, SYNC) only with one
TRANSITIONS: Final[frozenset[tuple[ExecutionMode, ExecutionMode]]] = frozenset(
    {
        (ExecutionMode.UNCLAIMED, ExecutionMode.SYNC),
        (ExecutionMode.UNCLAIMED, ExecutionMode.ASYNC),
        (ExecutionMode.SYNC, ExecutionMode.SYNC),
        (ExecutionMode.ASYNC, ExecutionMode.ASYNC),
    }
)


def claim(current: ExecutionMode, wanted: ExecutionMode, *, handover: bool = False) -> ExecutionMode:
    """The mode after ``current`` is asked for ``wanted``; raises :class:`ModeMixed` when not allowed."""
    if wanted is ExecutionMode.UNCLAIMED:
        raise ValueError("a client claims SYNC or ASYNC")
    if (current, wanted) in TRANSITIONS:
        return wanted
    if handover and (current, wanted) == (ExecutionMode.ASYNC, ExecutionMode.SYNC):
        return wanted
    raise ModeMixed(current)
