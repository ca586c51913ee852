"""Rarer garbage collections while a server runs.

A full (oldest-generation) collection walks every live object, and a server holding
thousands of sessions holds millions of them; with the default thresholds a burst of new
sessions triggers one after another, each holding the GIL (so every session's worker
thread waits behind it): in ``bench`` scenario 9's largest bursts a large share of the
server's CPU went to ``gc_collect_main`` (bench/README.md, "Server CPU per connection").
The young generation is collected every ``young`` net allocations instead of Python's 700:
in a burst each middle-generation pass walks the objects of the sessions just opened, and
fewer young passes let more of a session's short-lived objects die before one walks them.

The setting is process-wide, so several servers in one process share it
(:class:`~.shared_setting.SharedSetting`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from .shared_setting import SharedSetting

__all__ = ["rarer_collections"]

_thresholds: SharedSetting[tuple[int, int, int]] = SharedSetting(
    gc.get_threshold, lambda value: gc.set_threshold(*value)
)


@contextlib.contextmanager
def rarer_collections(young: int | None, full: int | None) -> Iterator[None]:
    """Within the block, the young generation's threshold is at least ``young`` and the
    oldest's at least ``full`` (``gc.set_threshold``'s first and third values); ``None``
    leaves that one as it is. Neither is ever lowered."""
    if young is None and full is None:
        yield
        return

    def raised(value: tuple[int, int, int]) -> tuple[int, int, int]:
        return (max(value[0], young or 0), value[1], max(value[2], full or 0))

    with _thresholds.held(raised):
        yield
