"""Why a session's connection ends, and what each end means: the one registry of session ends.

Every way a ``/ws`` connection can end is a :class:`SessionEnd`; :data:`END_RULES` says, for
each, the close code the server sends (or that the peer's own close stands), whether a
resumable session waits for a new connection after it (``EXT-RES-2``), whether a session
that outlives its connection keeps its capacity slot, and the reason logs and metrics name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from ...core import CloseCode

__all__ = ["END_RULES", "GOODBYE_CODES", "EndRule", "SessionEnd", "peer_end"]

#: Close codes with which a client says "I am done" rather than losing its link (``EXT-RES-2``).
GOODBYE_CODES: Final = frozenset({CloseCode.NORMAL, CloseCode.GOING_AWAY})


class SessionEnd(enum.Enum):
    """Why a session's connection ended (the value is the log and metric reason)."""

    CLOSE = "close"  # the client sent a ``close`` frame (WS-CLOSE-1)
    GOODBYE = "goodbye"  # the client closed the WebSocket with 1000 or 1001
    DISCONNECT = "disconnect"  # any other loss of the connection
    IDLE = "idle"  # no frame within the idle timeout (WS-IDLE-1)
    PING = "ping"  # no pong within the ping timeout (WS-PING-1)
    SHUTDOWN = "shutdown"  # the server drains or stops (WS-SHUT-1)
    HANDED_OVER = "handed_over"  # the server drains and kept the session in its store (EXT-HAND-1)
    LOST = "lost"  # the environment's process was found gone between requests (SRV-ISO-2)
    TAKEOVER = "takeover"  # another connection resumed the session (EXT-RES-5)
    ABORTED = "aborted"  # the environment aborted while answering (SRV-FAULT-1)
    ERROR = "error"  # the server failed while serving (never a chosen end)

    @property
    def rule(self) -> EndRule:
        return END_RULES[self]


@dataclass(frozen=True, slots=True)
class EndRule:
    """What one :class:`SessionEnd` means."""

    #: the code the server closes with; ``None``: given by the peer's close or by the fault
    close_code: CloseCode | None
    #: the close frame's reason (the fault's or the idle timeout's words where it is empty)
    close_reason: str
    #: a resumable session waits ``resume_grace_s`` for a new connection after it (EXT-RES-2)
    resumable: bool
    #: a session that outlives its connection keeps its capacity slot after it (EXT-RES-3)
    keeps_slot: bool


END_RULES: Final[dict[SessionEnd, EndRule]] = {
    SessionEnd.CLOSE: EndRule(CloseCode.NORMAL, "", resumable=False, keeps_slot=False),
    SessionEnd.GOODBYE: EndRule(None, "", resumable=False, keeps_slot=False),
    SessionEnd.DISCONNECT: EndRule(None, "", resumable=True, keeps_slot=True),
    SessionEnd.IDLE: EndRule(CloseCode.IDLE_TIMEOUT, "", resumable=False, keeps_slot=False),
    SessionEnd.PING: EndRule(CloseCode.INTERNAL_ERROR, "ping timeout", resumable=True, keeps_slot=True),
    SessionEnd.SHUTDOWN: EndRule(CloseCode.GOING_AWAY, "server shutting down", resumable=False, keeps_slot=False),
    SessionEnd.HANDED_OVER: EndRule(
        CloseCode.SERVICE_RESTART, "server restarting: resume the session", resumable=False, keeps_slot=False
    ),
    SessionEnd.LOST: EndRule(CloseCode.ENVIRONMENT_LOST, "environment lost", resumable=False, keeps_slot=False),
    SessionEnd.TAKEOVER: EndRule(
        CloseCode.TAKEN_OVER, "session taken over by another connection", resumable=False, keeps_slot=True
    ),
    SessionEnd.ABORTED: EndRule(None, "", resumable=False, keeps_slot=False),
    SessionEnd.ERROR: EndRule(None, "", resumable=False, keeps_slot=False),
}


def peer_end(peer_close_code: int | None) -> SessionEnd:
    """The end of a connection the peer ended: ``GOODBYE`` for a clean close (1000, 1001),
    else ``DISCONNECT``."""
    return SessionEnd.GOODBYE if peer_close_code in GOODBYE_CODES else SessionEnd.DISCONNECT
