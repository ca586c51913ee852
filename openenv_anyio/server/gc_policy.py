"""Rarer full garbage collections while a server runs.

A full (oldest-generation) collection walks every live object, and a server holding
thousands of sessions holds millions of them; with the default thresholds a burst of new
sessions triggers one after another, each holding the GIL (so every session's worker
thread waits behind it): in ``bench`` scenario 9's largest bursts a large share of the
server's CPU went to ``gc_collect_main`` (bench/README.md, "Server CPU per connection"). Young-generation
collections are left as they are.

The setting is process-wide, so several servers in one process share it
(:class:`~.shared_setting.SharedSetting`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from .shared_setting import SharedSetting

__all__ = ["rare_full_collections"]

_thresholds: SharedSetting[tuple[int, int, int]] = SharedSetting(
    gc.get_threshold, lambda value: gc.set_threshold(*value)
)


@contextlib.contextmanager
def rare_full_collections(threshold: int | None) -> Iterator[None]:
    """Within the block, the oldest generation's threshold is at least ``threshold``
    (``gc.set_threshold``'s third value); ``None`` changes nothing."""
    if threshold is None:
        yield
        return
    with _thresholds.held(lambda value: (value[0], value[1], max(value[2], threshold))):
        yield
