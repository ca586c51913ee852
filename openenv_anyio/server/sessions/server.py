"""What serving sessions uses of the server, as one Protocol for the modules that wire a
session together (:mod:`.base`, :mod:`.resumable`, :mod:`.attached`): the parts' own
Protocols (:class:`~.accept.AcceptServer`, :class:`~.connection.ConnectionServer`,
:class:`~.answers.AnswerServer`, :class:`~.session.SessionServer`) and the large-frame
parser. Each part asks only for its own."""

from __future__ import annotations

from typing import Protocol

from ..memory.large_frames import LargeFrames
from .accept import AcceptServer
from .answers import AnswerServer
from .connection import ConnectionServer
from .session import SessionServer

__all__ = ["SessionsServer"]


class SessionsServer(AcceptServer, ConnectionServer, AnswerServer, SessionServer, Protocol):
    """What serving a session uses of its server (see the module doc)."""

    @property
    def large_frames(self) -> LargeFrames:
        """The budget of bytes in flight and the parser of large frames (``SRV-MEM-1``, ``SRV-MEM-2``)."""
        ...
