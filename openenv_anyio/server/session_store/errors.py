"""What goes wrong with a session store, as typed errors (each one line when printed)."""

from __future__ import annotations

__all__ = ["CorruptRecord", "IncompatibleRecord", "RecordError", "StoreError", "StoreUnavailable"]


class StoreError(Exception):
    """A session store failed; the message is one line naming the store or the session."""


class StoreUnavailable(StoreError):
    """The store cannot be opened (a bad URL, a file that is not a database, a server that
    does not answer) or went away: the operation did nothing, or its outcome is unknown."""


class RecordError(StoreError):
    """One kept session's record cannot be read back; ``key_digest`` names it (other
    sessions are not concerned)."""

    def __init__(self, message: str, key_digest: str | None = None) -> None:
        super().__init__(message)
        self.key_digest = key_digest


class IncompatibleRecord(RecordError):
    """A record written by a version of the record format this one does not read."""


class CorruptRecord(RecordError):
    """A record that is not what a store writes (truncated, edited, another program's)."""
