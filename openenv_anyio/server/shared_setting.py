"""A process-wide interpreter setting that every server in the process shares.

Several servers may run in one process (tests, a fleet in one interpreter); a setting such
as ``gc``'s thresholds or the thread switch interval belongs to the whole process. The first
server to start sets it, the last to stop puts the value from before the first back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["SharedSetting"]

T = TypeVar("T")


class SharedSetting(Generic[T]):
    """One setting, read by ``read`` and written by ``write``, held by servers while they run."""

    def __init__(self, read: Callable[[], T], write: Callable[[T], None]) -> None:
        self._read = read
        self._write = write
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: T | None = None

    @contextlib.contextmanager
    def held(self, choose: Callable[[T], T]) -> Iterator[None]:
        """Within the block the setting is ``choose(value before)``, if this is the first
        holder (later holders find it set); the last holder to leave restores the value."""
        with self._lock:
            if self._holders == 0:
                saved = self._read()
                self._saved = saved
                chosen = choose(saved)
                if chosen != saved:
                    self._write(chosen)
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._saved is not None:
                    if self._read() != self._saved:
                        self._write(self._saved)
                    self._saved = None
