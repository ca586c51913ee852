"""Structured log events: one per session lifecycle step and per error frame sent.

Events go through ``structlog`` into the standard ``logging`` logger
``openenv_anyio.server`` (no global structlog configuration: an application embedding the
server keeps its own handlers). ``openenv-anyio serve --log-format json|console`` installs
a handler that renders them (:mod:`.log_setup`); every event carries the session's
``session_id``, ``episode_id`` and ``peer`` (and ``request_id``, ``close_code`` where they
apply).

Event names (the ``event`` key): ``session_opened`` (with its ``kind``: plain, resumable or
hosted), ``session_resumed``, ``session_parked``, ``session_handed_over``, ``session_detached``
(a hosted session's socket closed), ``episode_reset`` (debug), ``session_closed`` (with its
``outcome``: closed, expired or shutdown), ``connection_refused``, ``error_sent``,
``server_started``, ``server_draining``, ``server_stopped``.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

import structlog

from ...core import ErrorCode

__all__ = ["LOGGER_NAME", "SessionIdentity", "log_event", "logger"]

LOGGER_NAME: Final = "openenv_anyio.server"

#: Error codes that mean the server or the environment failed (the rest are the client's).
_SERVER_SIDE_ERRORS: Final = frozenset({ErrorCode.EXECUTION_ERROR.value, ErrorCode.FACTORY_ERROR.value})


class SessionIdentity(Protocol):
    """What an event says about the session it concerns."""

    @property
    def session_id(self) -> str: ...

    @property
    def episode_id(self) -> str | None: ...

    @property
    def peer(self) -> str | None: ...


_stdlib_logger: Final = logging.getLogger(LOGGER_NAME)
logger: Final = structlog.wrap_logger(
    _stdlib_logger,
    wrapper_class=structlog.stdlib.BoundLogger,
    processors=[structlog.stdlib.filter_by_level, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
)


def _ids(session: SessionIdentity | None) -> dict[str, Any]:
    if session is None:
        return {}
    return {"session_id": session.session_id, "episode_id": session.episode_id, "peer": session.peer}


def log_event(level: int, event: str, session: SessionIdentity | None = None, **fields: Any) -> None:
    """Log ``event`` at ``level`` with the session's identity and ``fields``."""
    # asked of the standard logger itself: structlog's lazy proxy binds a new logger per call
    if _stdlib_logger.isEnabledFor(level):
        logger.log(level, event, **_ids(session), **fields)


def error_level(code: str) -> int:
    """WARNING for failures of the server or environment, INFO for the client's mistakes."""
    return logging.WARNING if code in _SERVER_SIDE_ERRORS else logging.INFO
