"""When and how the client resumes its session after a broken connection (resume extension)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import RESUMABLE_CLOSE_CODES
from .errors import ConnectionClosedByServer, ConnectionLost, EnvClientError

__all__ = ["ReconnectPolicy", "worth_resuming"]


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How often to try to resume, and how long to wait between tries.

    The first try is immediate; then the wait doubles from ``backoff_s`` up to
    ``max_backoff_s``. Each try is bounded by the client's ``connect_timeout_s``.
    """

    attempts: int = 5
    backoff_s: float = 0.05
    max_backoff_s: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("backoff_s and max_backoff_s must not be negative")

    def delay_s(self, attempt: int) -> float:
        """The wait before try number ``attempt`` (0-based)."""
        if attempt == 0:
            return 0.0
        return min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))


def worth_resuming(error: EnvClientError) -> bool:
    """Whether ``error`` is a broken connection that resuming may repair."""
    if isinstance(error, ConnectionClosedByServer):
        return error.code in RESUMABLE_CLOSE_CODES  # the registry's x-resumable
    return isinstance(error, ConnectionLost)
