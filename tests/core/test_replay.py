"""Bringing an episode back by replay (``core.replay``): the log, the check's phases, and a
mismatch as the typed ``REPLAY_MISMATCH``, never a silently different episode."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from openenv_anyio.core import ErrorCode, spec_validator
from openenv_anyio.core.replay import (
    _TRANSITIONS,
    EpisodeLog,
    ReplayCheck,
    ReplayMismatch,
    ReplayPhase,
    answer_digest,
)
from tests.replaying import replay


class Walk:
    """A walk on a line: deterministic from its seed (its own random generator)."""

    def __init__(self) -> None:
        self.position = 0
        self.rng = random.Random()

    def reset(self, seed: int | None = None, **_: Any) -> dict[str, Any]:
        self.rng = random.Random(seed)
        self.position = 0
        return {"observation": {"position": 0}, "reward": None, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.position += action["move"] + self.rng.choice((-1, 0, 1))
        return {"observation": {"position": self.position}, "reward": float(self.position), "done": False}


def record(reset: dict[str, Any], moves: list[int]) -> EpisodeLog:
    env = Walk()
    log = EpisodeLog.start(reset, env.reset(**reset))
    for move in moves:
        action = {"move": move}
        log.record_step(action, env.step(action))
    return log


def test_a_deterministic_episode_comes_back() -> None:
    log = record({"seed": 11, "episode_id": "e"}, [1, -1, 2, 0, 1])
    env = Walk()
    check = replay(log, env)
    assert check.phase is ReplayPhase.DONE and check.next_call() is None
    original = Walk()
    original.reset(seed=11)
    for move in (1, -1, 2, 0, 1):
        original.step({"move": move})
    assert env.position == original.position  # the replayed env is where the episode was


def test_the_calls_come_in_order() -> None:
    log = record({"seed": 3}, [5, 6])
    check = ReplayCheck(log)
    env = Walk()
    calls = []
    while (call := check.next_call()) is not None:
        calls.append((call.step, dict(call.arguments), call.action))
        check.check(env.reset(**call.arguments) if call.step is None else env.step(call.action))
    assert calls == [(None, {"seed": 3}, None), (1, {}, {"move": 5}), (2, {}, {"move": 6})]


def test_an_episode_of_no_steps_is_back_after_its_reset() -> None:
    check = replay(record({"seed": 1}, []), Walk())
    assert check.phase is ReplayPhase.DONE


def test_an_unseeded_episode_is_a_mismatch_at_the_step_that_differs() -> None:
    """Without a seed the walk is another one: the check names the first step that differs,
    carries REPLAY_MISMATCH, and stays failed."""
    log = record({"seed": 5}, [0] * 40)
    env = Walk()
    check = ReplayCheck(log)
    env.reset(seed=6)  # another seed: the same reset answer, other steps
    check.check({"observation": {"position": 0}, "reward": None, "done": False})
    with pytest.raises(ReplayMismatch) as caught:
        while (call := check.next_call()) is not None:
            check.check(env.step(call.action))
    mismatch = caught.value
    assert mismatch.code is ErrorCode.REPLAY_MISMATCH and mismatch.step is not None
    assert f"replaying step {mismatch.step} of 40 gave another answer" in mismatch.message
    assert spec_validator("error-codes.json").is_valid(mismatch.error_data()["code"])
    assert check.phase is ReplayPhase.FAILED and check.next_call() is None
    with pytest.raises(RuntimeError, match="the replay is failed"):
        check.check({})


def test_a_reset_that_answers_otherwise_is_a_mismatch() -> None:
    check = ReplayCheck(record({"seed": 5}, [1]))
    with pytest.raises(ReplayMismatch, match="replaying the reset gave another answer") as caught:
        check.check({"observation": {"position": 1}, "reward": None, "done": False})
    assert caught.value.step is None


def test_answers_compare_as_their_json() -> None:
    assert answer_digest({"a": 1, "b": [1.5, None]}) == answer_digest({"b": [1.5, None], "a": 1})
    assert answer_digest({"x": float("nan")}) == answer_digest({"x": float("nan")})
    assert answer_digest({"x": 1}) != answer_digest({"x": 1.5})
    assert answer_digest({"done": True}) != answer_digest({"done": 1})


def test_a_log_goes_through_json_and_back() -> None:
    log = record({"seed": 2, "episode_id": "ep"}, [1, 2, 3])
    again = EpisodeLog.from_json(json.loads(json.dumps(log.to_json())))
    assert again == log
    assert replay(again, Walk()).phase is ReplayPhase.DONE


@pytest.mark.parametrize(
    "value",
    [[], {"reset": {}, "steps": []}, {"reset": {}, "reset_answer": "d", "steps": [["a"]]}],
)
def test_a_malformed_log_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="episode log"):
        EpisodeLog.from_json(value)


def test_the_transition_table_ends_in_done_or_failed() -> None:
    assert set(_TRANSITIONS) == set(ReplayPhase)
    assert _TRANSITIONS[ReplayPhase.DONE] == _TRANSITIONS[ReplayPhase.FAILED] == frozenset()
    for phase in (ReplayPhase.RESET, ReplayPhase.STEPS):
        assert ReplayPhase.FAILED in _TRANSITIONS[phase] and ReplayPhase.DONE in _TRANSITIONS[phase]
