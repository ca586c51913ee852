"""Garbage collections are rarer while a server runs, and the setting comes back after."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest
import trio
from serve_process import serve_process

from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.gc_policy import rarer_collections
from tests.server.interval_env import every_workers_report


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_raised_within_and_restored_after_nested_holders() -> None:
    with rarer_collections(None, 100):
        assert gc.get_threshold() == (700, 10, 100)
        with rarer_collections(None, 100):  # a second server in the same process
            assert gc.get_threshold() == (700, 10, 100)
        assert gc.get_threshold() == (700, 10, 100)  # the first still runs
    assert gc.get_threshold() == (700, 10, 10)


def test_none_and_lower_thresholds_change_nothing() -> None:
    with rarer_collections(None, None):
        assert gc.get_threshold() == (700, 10, 10)
    gc.set_threshold(700, 10, 500)
    with rarer_collections(None, 100):  # never lowered
        assert gc.get_threshold() == (700, 10, 500)
    assert gc.get_threshold() == (700, 10, 500)


def test_the_young_threshold_is_raised_alone_or_with_the_full_one_and_never_lowered() -> None:
    with rarer_collections(10_000, None):
        assert gc.get_threshold() == (10_000, 10, 10)
        with rarer_collections(5_000, 100):  # a second server in the same process finds them set
            assert gc.get_threshold() == (10_000, 10, 10)
        assert gc.get_threshold() == (10_000, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    gc.set_threshold(50_000, 10, 10)
    with rarer_collections(10_000, None):
        assert gc.get_threshold() == (50_000, 10, 10)


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), rarer_collections(None, 100):
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.trio
async def test_a_serving_server_holds_its_process_settings_until_it_stops() -> None:
    """The gc threshold, and the thread switch interval (``server/switch_interval.py``)."""
    interval = sys.getswitchinterval()
    server = EnvServer(
        GuessNumberEnv, ServerConfig(full_gc_threshold=250, young_gc_threshold=2_000, switch_interval_s=0.04)
    )
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            assert gc.get_threshold() == (2_000, 10, 250)
            assert sys.getswitchinterval() == pytest.approx(0.04)
            server.shutdown()
    assert gc.get_threshold() == (700, 10, 10)
    assert sys.getswitchinterval() == interval


def test_config_refuses_a_threshold_below_one() -> None:
    with pytest.raises(ValueError, match="full_gc_threshold"):
        ServerConfig(full_gc_threshold=0)
    with pytest.raises(ValueError, match="young_gc_threshold"):
        ServerConfig(young_gc_threshold=-1)
    assert ServerConfig(full_gc_threshold=None).full_gc_threshold is None
    assert ServerConfig(young_gc_threshold=None).young_gc_threshold is None
    assert ServerConfig().young_gc_threshold == 10_000


def test_every_worker_serves_with_the_default_thresholds() -> None:
    with serve_process("tests.server.interval_env:SwitchIntervalEnv", "--workers", "2") as served:
        reports = every_workers_report(served.url, served.pids)
        seen = {pid: report["gc_threshold"] for pid, report in reports.items()}
        assert sorted(seen) == sorted(served.pids)
        assert all(value == [10_000, 10, 100] for value in seen.values()), seen


@pytest.mark.parametrize("flag", ["--young-gc-threshold", "--full-gc-threshold"])
def test_the_cli_refuses_a_negative_threshold_in_one_line(flag: str) -> None:
    target = "openenv_anyio.envs.guess:GuessNumberEnv"
    argv = [sys.executable, "-m", "openenv_anyio", "serve", target, flag, "-1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"openenv-anyio serve: {flag} must be at least 1 (0 leaves it alone)"
    )
