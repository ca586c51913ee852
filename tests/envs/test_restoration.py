"""How an episode is brought back in another process, the environment's side
(``openenv_anyio.restoration``): the way an environment offers, its snapshots sealed and
limited, and the adapters' snapshots of real Gymnasium and openenv-core environments."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from adapter_samples import AsyncCountEnv, InjectableCountEnv

from openenv_anyio.core.replay import EpisodeLog, ReplayMismatch, ReplayPhase
from openenv_anyio.environment import Environment
from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv
from openenv_anyio.restoration import (
    RestoreFailed,
    RestoreWay,
    SnapshotFailed,
    SnapshotTooLarge,
    restore_way,
    seal_snapshot,
)
from tests.replaying import replay


class _Plain(Environment):
    pass


class _Deterministic(Environment):
    DETERMINISTIC = True


class _Snapshots(Environment):
    DETERMINISTIC = True  # snapshot wins: exact and cheaper than a replay

    def snapshot(self) -> bytes:
        return b"x"

    def restore(self, snapshot: bytes) -> None:
        pass


class _SnapshotOnly(Environment):
    def snapshot(self) -> bytes:  # no restore: nothing can be brought back with it
        return b"x"


def test_the_way_an_environment_offers() -> None:
    assert restore_way(_Plain) is RestoreWay.NONE
    assert restore_way(_Plain(), deterministic=True) is RestoreWay.REPLAY  # the operator's word
    assert restore_way(_Deterministic) is RestoreWay.REPLAY
    assert restore_way(_Deterministic, deterministic=False) is RestoreWay.NONE
    assert restore_way(_Snapshots()) is RestoreWay.SNAPSHOT
    assert restore_way(_SnapshotOnly) is RestoreWay.NONE


def test_a_snapshot_is_json_or_bytes_and_comes_back_equal() -> None:
    kept = seal_snapshot({"board": [[1, 2], [3, None]], "turn": "x", "score": 0.5})
    assert kept.is_json and kept.value() == {"board": [[1, 2], [3, None]], "turn": "x", "score": 0.5}
    raw = seal_snapshot(bytearray(b"\x00\xff"))
    assert not raw.is_json and raw.value() == b"\x00\xff"


@pytest.mark.parametrize("value", [{1, 2}, object(), {"x": float("nan")}, [float("inf")]])
def test_a_snapshot_that_is_not_json_is_refused(value: Any) -> None:
    with pytest.raises(SnapshotFailed, match="not JSON"):
        seal_snapshot(value)


def test_a_snapshot_over_the_limit_is_refused() -> None:
    assert seal_snapshot(b"x" * 64, limit=64).data == b"x" * 64
    with pytest.raises(SnapshotTooLarge, match="65 bytes, more than the limit of 64 bytes") as caught:
        seal_snapshot(b"x" * 65, limit=64)
    assert (caught.value.size, caught.value.limit) == (65, 64)
    with pytest.raises(SnapshotTooLarge):
        seal_snapshot({"text": "é" * 40}, limit=64)  # the limit counts encoded bytes


def _run(env: GymnasiumEnv, actions: list[int]) -> list[dict[str, Any]]:
    return [env.step({"action": action}) for action in actions]


def test_a_classic_control_episode_comes_back_from_its_snapshot() -> None:
    """CartPole: a snapshot taken mid-episode, restored into a fresh instance, goes on as the
    uninterrupted episode does, time limit and episode id included."""
    served = GymnasiumEnv.bind("CartPole-v1", max_episode_steps=12)
    assert served.RESTORE_WAY is RestoreWay.SNAPSHOT and restore_way(served) is RestoreWay.SNAPSHOT
    original = served()
    original.reset(seed=7, episode_id="ep-1")
    _run(original, [0, 1, 1, 0, 1])
    snapshot = seal_snapshot(original.snapshot())
    assert not snapshot.is_json
    later = [1, 0, 0, 1, 1, 0, 1]
    expected = _run(original, later)
    brought_back = served()
    brought_back.restore(snapshot.value())
    assert brought_back.state == {"episode_id": "ep-1", "step_count": 5, "env_id": "CartPole-v1"}
    assert _run(brought_back, later) == expected
    assert expected[-1]["truncated"] or expected[-1]["terminated"]  # the time limit came back too
    assert brought_back.state["step_count"] == 12


def test_a_drawing_environment_does_not_snapshot() -> None:
    """A renderer's surface does not pickle: rgb_array says NONE and its snapshot() refuses."""
    env = GymnasiumEnv("CartPole-v1", render_mode="rgb_array")
    try:
        assert env.RESTORE_WAY is RestoreWay.NONE
        with pytest.raises(SnapshotFailed, match="does not pickle safely"):
            env.snapshot()
    finally:
        env.close()


def test_the_snapshot_rule_can_be_overridden() -> None:
    assert GymnasiumEnv.bind("CartPole-v1", snapshots=False).RESTORE_WAY is RestoreWay.NONE


@pytest.mark.parametrize(
    ("snapshot", "words"),
    [
        (b"not a pickle", "does not load"),
        (pickle.dumps(("another layout", 1)), "not one of a Gymnasium environment"),
    ],
)
def test_a_foreign_gymnasium_snapshot_is_refused(snapshot: bytes, words: str) -> None:
    env = GymnasiumEnv("CartPole-v1")
    try:
        with pytest.raises(RestoreFailed, match=words):
            env.restore(snapshot)
        assert env.step({"action": 0})["done"] is False  # the instance is unharmed
    finally:
        env.close()


def test_an_upstream_env_with_set_state_comes_back_by_injected_state() -> None:
    served = OpenEnvCoreEnv.wrap(InjectableCountEnv, set_state=True)
    assert restore_way(served) is RestoreWay.SNAPSHOT
    original = served()
    original.reset(episode_id="ep-7")
    for amount in (3, 4):
        original.step({"amount": amount})
    snapshot = seal_snapshot(original.snapshot())
    assert snapshot.is_json
    brought_back = served()
    brought_back.restore(snapshot.value())
    assert brought_back.state == original.state
    assert brought_back.step({"amount": 5}).observation["total"] == 12
    assert brought_back.state["step_count"] == 3


def test_an_upstream_env_without_set_state_does_not_snapshot() -> None:
    assert restore_way(OpenEnvCoreEnv.wrap(InjectableCountEnv)) is RestoreWay.NONE
    assert not hasattr(OpenEnvCoreEnv.wrap(InjectableCountEnv)(), "snapshot")


def test_set_state_needs_a_reset_that_takes_injected_state() -> None:
    with pytest.raises(Exception, match="declares set_state but its reset takes no injected_state"):
        OpenEnvCoreEnv.wrap(AsyncCountEnv, set_state=True)


def test_an_upstream_restore_the_env_refuses_is_a_restore_failure() -> None:
    env = OpenEnvCoreEnv.wrap(InjectableCountEnv, set_state=True)()
    with pytest.raises(RestoreFailed, match="injected_state"):
        env.restore({"total": "many"})


def test_a_seeded_gymnasium_episode_comes_back_by_replay() -> None:
    """A real CartPole episode, replayed with the recorded seed and actions on a fresh
    instance, answers as recorded; unseeded, it does not, and the check says so."""
    for seed, outcome in ((4, "done"), (None, "mismatch")):
        original = GymnasiumEnv("CartPole-v1")
        arguments = {"seed": seed, "episode_id": "ep"}
        log = EpisodeLog.start(arguments, original.reset(**arguments))
        for action in (0, 1, 1, 0):
            log.record_step({"action": action}, original.step({"action": action}))
        fresh = GymnasiumEnv("CartPole-v1")
        try:
            if outcome == "done":
                assert replay(log, fresh).phase is ReplayPhase.DONE
                assert fresh.state == original.state
            else:
                with pytest.raises(ReplayMismatch, match="replaying the reset"):
                    replay(log, fresh)
        finally:
            original.close()
            fresh.close()
