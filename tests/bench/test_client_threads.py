"""Smoke runs of ``bench.client_threads``: blocking clients stepped from several threads.

Checks that every thread's steps come back, per-thread and on one shared client, for our
clients in this process and for upstream 0.10's client in the peer venv. No speed asserted.
"""

from __future__ import annotations

import pytest

from bench import client_threads
from bench.stacks import ours


@pytest.fixture(scope="module")
def url() -> object:
    ours.check_available()
    server = ours.start_server("echo_inline", max_concurrent_envs=64)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("mode", client_threads.MODES)
@pytest.mark.parametrize("kind", ["compat", "native"])
def test_our_blocking_clients_step_from_threads(url: str, kind: str, mode: str) -> None:
    found = client_threads.measure(kind, mode, url, threads=6, steps=4)
    assert (found["errors"], found["first_error"], found["steps"]) == (0, "", 24)
    assert found["p50_ms"] <= found["p99_ms"]
    assert found["os_threads"] >= 7  # the six stepping threads and the main one at least


def test_upstream_blocking_client_steps_from_threads(url: str) -> None:
    if not client_threads.UPSTREAM_PYTHON.exists():
        pytest.skip(f"upstream OpenEnv 0.10's peer venv is not installed ({client_threads.UPSTREAM_PYTHON})")
    found = client_threads._run_child("upstream", "per-thread", url, 4, 3)
    assert (found["errors"], found["steps"]) == (0, 12)
