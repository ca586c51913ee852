"""The interpreter's thread switch interval while a server runs (``sys.setswitchinterval``).

A thread that wants the GIL waits this long before it asks the holder to let go (Python's
default: 5 ms). With thousands of session threads waking together (blocking environments
at scale), each forced hand-over costs the event loop's thread its turn, and every system
call it makes gives the GIL up to them again: a longer interval lets the loop finish more
of its work per hold (bench/README.md, "Scale"). The prices: a session thread running pure
Python code for longer than the interval keeps the loop, and every other session, waiting
up to the interval; and in bursts of thousands of new sessions fewer connected in time
(bench/README.md, "Scale"). It is a setting to choose, not a default.

The setting is process-wide, so several servers in one process share it
(:class:`~.shared_setting.SharedSetting`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from .shared_setting import SharedSetting

__all__ = ["switch_interval"]

_interval: SharedSetting[float] = SharedSetting(sys.getswitchinterval, sys.setswitchinterval)


@contextlib.contextmanager
def switch_interval(seconds: float | None) -> Iterator[None]:
    """Within the block, the thread switch interval is ``seconds``; ``None`` changes nothing."""
    if seconds is None:
        yield
        return
    with _interval.held(lambda _: seconds):
        yield
