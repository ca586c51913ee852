"""Full garbage collections are rarer while a server runs, and the setting comes back after."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest
import trio

from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.gc_policy import rare_full_collections


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_raised_within_and_restored_after_nested_holders() -> None:
    with rare_full_collections(100):
        assert gc.get_threshold() == (700, 10, 100)
        with rare_full_collections(100):  # a second server in the same process
            assert gc.get_threshold() == (700, 10, 100)
        assert gc.get_threshold() == (700, 10, 100)  # the first still runs
    assert gc.get_threshold() == (700, 10, 10)


def test_none_and_lower_thresholds_change_nothing() -> None:
    with rare_full_collections(None):
        assert gc.get_threshold() == (700, 10, 10)
    gc.set_threshold(700, 10, 500)
    with rare_full_collections(100):  # never lowered
        assert gc.get_threshold() == (700, 10, 500)
    assert gc.get_threshold() == (700, 10, 500)


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), rare_full_collections(100):
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.trio
async def test_a_serving_server_holds_its_process_settings_until_it_stops() -> None:
    """The gc threshold, and the thread switch interval (``server/switch_interval.py``)."""
    interval = sys.getswitchinterval()
    server = EnvServer(GuessNumberEnv, ServerConfig(full_gc_threshold=250, switch_interval_s=0.04))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            assert gc.get_threshold()[2] == 250
            assert sys.getswitchinterval() == pytest.approx(0.04)
            server.shutdown()
    assert gc.get_threshold() == (700, 10, 10)
    assert sys.getswitchinterval() == interval


def test_config_refuses_a_threshold_below_one() -> None:
    with pytest.raises(ValueError, match="full_gc_threshold"):
        ServerConfig(full_gc_threshold=0)
    assert ServerConfig(full_gc_threshold=None).full_gc_threshold is None
