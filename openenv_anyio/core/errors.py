"""Error codes of the protocol and the one exception the sans-IO core raises."""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["MAX_MESSAGE_CHARS", "ErrorCode", "ProtocolError", "clip_message"]

#: Longest human-readable message the core puts in an error (a frame may be megabytes).
MAX_MESSAGE_CHARS = 240


def clip_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, ending in "..." when it was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ErrorCode(enum.StrEnum):
    """The error-code registry (``spec/v1/error-codes.json``); a test keeps both equal."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    EPISODE_MISMATCH = "EPISODE_MISMATCH"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    REQUEST_ID_REUSED = "REQUEST_ID_REUSED"
    SERVER_BUSY = "SERVER_BUSY"
    REPLAY_MISMATCH = "REPLAY_MISMATCH"
    VALIDATION_REFUSED = "VALIDATION_REFUSED"


class ProtocolError(Exception):
    """A frame broke the protocol: carries the error code a peer should be told.

    ``pointer`` is the JSON pointer of the offending value ("" for the whole frame),
    ``keyword`` the schema keyword that failed, and ``errors`` one entry per fault in the
    shape of the ``errors`` list of a VALIDATION_ERROR frame.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        pointer: str = "",
        keyword: str | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.pointer = pointer
        self.keyword = keyword
        self.errors = errors

    def error_data(self) -> dict[str, Any]:
        """The ``data`` object of the error frame that reports this error."""
        data: dict[str, Any] = {"message": self.message, "code": self.code.value}
        if self.errors is not None:
            data["errors"] = self.errors
        return data

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value}, {self.message!r}, pointer={self.pointer!r})"
