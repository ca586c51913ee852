"""Rarer full garbage collections while a server runs.

A full (oldest-generation) collection walks every live object, and a server holding
thousands of sessions holds millions of them; with the default thresholds a burst of new
sessions triggers one after another, each holding the GIL (so every session's worker
thread waits behind it): in ``bench`` scenario 9's largest bursts a large share of the
server's CPU went to ``gc_collect_main`` (bench/README.md, "Server CPU per connection"). Young-generation
collections are left as they are.

The setting is process-wide, so several servers in one process share it: the first to
start raises the threshold, the last to stop puts the previous one back.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["rare_full_collections"]

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def rare_full_collections(threshold: int | None) -> Iterator[None]:
    """Within the block, the oldest generation's threshold is at least ``threshold``
    (``gc.set_threshold``'s third value); ``None`` changes nothing."""
    if threshold is None:
        yield
        return
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = gc.get_threshold()
            young, middle, oldest = _saved
            if oldest < threshold:
                gc.set_threshold(young, middle, threshold)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
