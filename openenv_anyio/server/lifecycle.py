"""The server's phases, from start to stop.

Theory of operation: a server is ``STARTING`` until it listens, then ``SERVING``. A
shutdown (SIGTERM, SIGINT, :meth:`EnvServer.shutdown`) moves it to ``DRAINING``: ``GET
/ready`` answers 503 so load balancers stop sending work, new ``/ws`` connections are closed
with 1013 (try again later: clients go to another server), and every session ends after the
request it is executing, if any, is answered (close 1001). When they have all ended, or
``drain_timeout_s`` has passed, the server is ``STOPPING``: the connections still executing
a request are closed with 1001 (the request abandoned) and the environments closed. Then it
is ``STOPPED``. Phases only move forward; a second shutdown request changes nothing.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["PhaseError", "ServerPhase", "TRANSITIONS"]


class ServerPhase(enum.Enum):
    STARTING = "starting"
    SERVING = "serving"
    DRAINING = "draining"
    STOPPING = "stopping"
    STOPPED = "stopped"


#: phase -> the phases it may move to
TRANSITIONS: Final[dict[ServerPhase, frozenset[ServerPhase]]] = {
    ServerPhase.STARTING: frozenset({ServerPhase.SERVING, ServerPhase.DRAINING}),
    ServerPhase.SERVING: frozenset({ServerPhase.DRAINING}),
    ServerPhase.DRAINING: frozenset({ServerPhase.STOPPING}),
    ServerPhase.STOPPING: frozenset({ServerPhase.STOPPED}),
    ServerPhase.STOPPED: frozenset(),
}


class PhaseError(RuntimeError):
    """A phase change the table does not allow (a server bug)."""


def check_transition(current: ServerPhase, new: ServerPhase) -> None:
    """Raise :class:`PhaseError` unless ``current`` may move to ``new``."""
    if new not in TRANSITIONS[current]:
        raise PhaseError(f"server phase cannot go from {current.value} to {new.value}")
