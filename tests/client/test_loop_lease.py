"""The shared loop threads of blocking clients (``client.loop_thread``): a hold given back
by a finalizer that the garbage collector runs while the same thread is taking a hold."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from openenv_anyio.client import loop_thread
from openenv_anyio.client.loop_thread import LoopLease


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_hold_given_back_while_one_is_taken_on_the_same_thread(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """A dropped client's finalizer may run (the collector) inside another client's taking of
    a hold, on the same thread: the finalizer's release must not wait for the lock that
    thread already holds (it deadlocked the thread for good)."""
    dropped = LoopLease(backend)
    dropped.loop.start()

    class CollectedMeanwhile(dict[str, Any]):
        """The shared table, whose first read runs what the collector runs when it finds the
        dropped client (any allocation under the lock may start a collection)."""

        def get(self, key: str, default: Any = None) -> Any:
            if dropped._held:
                dropped.release()
            return super().get(key, default)

    taken: list[LoopLease] = []
    with monkeypatch.context() as patched:
        patched.setattr(loop_thread, "_shared", CollectedMeanwhile(loop_thread._shared))
        worker = threading.Thread(target=lambda: taken.append(LoopLease(backend)), daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "taking a hold deadlocked"
        lease = taken[0]
        try:
            assert not dropped._held and lease._held
            assert loop_thread._shared[backend] == (dropped.loop, 1) and lease.loop is dropped.loop
        finally:
            lease.release()
        assert backend not in loop_thread._shared
