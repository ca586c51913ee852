"""When and how the client resumes its session after a broken connection (resume extension).

A resume is tried until it works, until a failure that time cannot repair, or until the
policy's budget is spent: ``within_s`` seconds since the break (long enough for a server
restart of a few seconds, ``EXT-HAND-6``) and, if set, ``attempts`` tries.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import RESUMABLE_CLOSE_CODES, CloseCode
from .errors import (
    CapacityReached,
    ConnectError,
    ConnectionClosedByServer,
    ConnectionLost,
    EnvClientError,
    HandshakeRejected,
    ProxyRejected,
)

__all__ = ["ReconnectPolicy", "retry_resume_after", "worth_resuming"]

#: HTTP statuses of a refused handshake (or proxy tunnel) that a restart explains: a proxy or balancer in front
#: of a server that is not back yet (bad gateway, unavailable, gateway timeout), or too many
#: requests. Any other status (401, 403, 404...) will not change by trying again.
RETRIED_HANDSHAKE_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How long to keep trying to resume, and how long to wait between tries.

    The first try is immediate; then the wait doubles from ``backoff_s`` up to
    ``max_backoff_s``. Tries go on for ``within_s`` seconds after the connection broke
    (default 15: a server restart of a few seconds is ridden out; None: no time limit) and,
    when ``attempts`` is set, for at most that many tries; whichever ends first. Each try is
    bounded by the client's ``connect_timeout_s`` and by the time left.
    """

    attempts: int | None = None
    backoff_s: float = 0.05
    max_backoff_s: float = 2.0
    within_s: float | None = 15.0

    def __post_init__(self) -> None:
        if self.attempts is not None and (isinstance(self.attempts, bool) or self.attempts < 1):
            raise ValueError(
                f"attempts must be at least 1 (or None: as many as within_s allows), not {self.attempts!r}"
            )
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("backoff_s and max_backoff_s must not be negative")
        if self.within_s is not None and not self.within_s > 0:
            raise ValueError(
                f"within_s must be a positive number of seconds (or None: no limit), not {self.within_s!r}"
            )
        if self.attempts is None and self.within_s is None:
            raise ValueError("give attempts or within_s (or both): resuming must end some time")

    def delay_s(self, attempt: int) -> float:
        """The wait before try number ``attempt`` (0-based)."""
        if attempt == 0:
            return 0.0
        return min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))

    def time_left_s(self, elapsed_s: float) -> float | None:
        """The seconds left for trying, ``elapsed_s`` after the break (None: no time limit)."""
        return None if self.within_s is None else max(0.0, self.within_s - elapsed_s)

    def next_delay_s(self, attempt: int, elapsed_s: float) -> float | None:
        """The wait before try number ``attempt`` (0-based), ``elapsed_s`` after the break,
        or None when the budget is spent (no try may start after ``within_s``)."""
        if self.attempts is not None and attempt >= self.attempts:
            return None
        delay = self.delay_s(attempt)
        left = self.time_left_s(elapsed_s)
        if left is not None and attempt > 0 and delay >= left:
            return None
        return delay


def worth_resuming(error: EnvClientError) -> bool:
    """Whether ``error`` is a broken connection that resuming may repair."""
    if isinstance(error, ConnectionClosedByServer):
        return error.code in RESUMABLE_CLOSE_CODES  # the registry's x-resumable
    return isinstance(error, ConnectionLost)


def retry_resume_after(error: EnvClientError) -> bool:
    """Whether a resume that failed with ``error`` is worth trying again (``EXT-HAND-6``).

    Time repairs what a restarting server causes: nothing listening yet, a connection that
    breaks, a close with a resumable code (1012 service restart, 1013 draining or at capacity)
    or 1001 (the server stopping: the next one may listen on the same address), a server at
    capacity, a proxy whose server is not back. It does not repair a refused token or
    credential, a session the server does not know, or an extension it no longer speaks.
    """
    match error:
        case HandshakeRejected() | ProxyRejected():
            return error.status in RETRIED_HANDSHAKE_STATUSES
        case ConnectionClosedByServer():
            return worth_resuming(error) or error.code == CloseCode.GOING_AWAY
        case ConnectError() | ConnectionLost() | CapacityReached():
            return True
        case _:
            return False
