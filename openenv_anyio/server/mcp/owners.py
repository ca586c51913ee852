"""Where the hosted sessions of the other workers of a ``serve --workers N`` server live, and
the mark of a ``POST /mcp`` request one worker forwarded to another (``workers.forwarding``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

__all__ = ["FORWARDED_HEADER", "SessionOwners"]

#: Marks a request one worker forwarded to the owner of the session it names (served there,
#: never forwarded again: ``workers.forwarding``).
FORWARDED_HEADER: Final = b"openenv-anyio-forwarded"


class SessionOwners(Protocol):
    """Where the hosted sessions of the other workers of a ``serve --workers N`` server live
    (their ids carry their worker: ``workers.routing``), and the way to ask them."""

    def owner_of(self, session_id: str) -> int | None:
        """The other worker's slot holding ``session_id``; None when it is not another's."""
        ...

    async def forward(
        self, slot: int, method: str, target: str, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """That worker's answer (status, headers, body) to the request; None without one."""
        ...
