"""Small seeded environments the validation tests serve, one per env API: ours, Gymnasium's
(through the adapter) and openenv-core's (through the adapter), written the way their authors
write them."""

from __future__ import annotations

import random
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from openenv.core.env_server.interfaces import Environment as CoreEnvironment
from openenv.core.env_server.types import Action, Observation, State

from openenv_anyio import Environment


class DiceEnv(Environment):
    """Rolls a seeded die: each step's reward is whether the guess matched the roll; it
    remembers the episode's rolls (``history``), which a reset must forget."""

    def __init__(self) -> None:
        self._rng = random.Random()
        self._episode_id: str | None = None
        self._history: list[int] = []

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        self._rng = random.Random(seed)
        self._episode_id = episode_id
        self._history = []
        return {"history": [], "reward": None, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        roll = self._rng.randint(1, 6)
        self._history.append(roll)
        return {"history": list(self._history), "reward": float(roll == action.get("guess")), "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "step_count": len(self._history), "rolls": list(self._history)}


class UnseededEnv(DiceEnv):
    """A reset that takes no seed: the server cannot give it one."""

    def reset(self, episode_id: str | None = None) -> dict[str, Any]:  # type: ignore[override]
        return super().reset(seed=0, episode_id=episode_id)


class DriftEnv(gymnasium.Env[np.ndarray, int]):
    """A walk on a line, pushed by the action and by seeded noise; ``visits`` counts the
    positions seen this episode."""

    def __init__(self) -> None:
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(-100.0, 100.0, (1,), np.float64)
        self._position = 0.0
        self._visits: dict[int, int] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = 0.0
        self._visits = {}
        return np.array([self._position]), {"visits": 0}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._position += int(action) - 1 + float(self.np_random.normal(0.0, 0.1))
        cell = round(self._position)
        self._visits[cell] = self._visits.get(cell, 0) + 1
        return np.array([self._position]), -abs(self._position), False, False, {"visits": self._visits[cell]}


class CountAction(Action):
    amount: int = 1


class CountObservation(Observation):
    total: int = 0
    draws: list[int] = []


class CountState(State):
    total: int = 0


class CountEnv(CoreEnvironment[CountAction, CountObservation, CountState]):
    """Adds the action's amount and a seeded draw to a running total (openenv-core style)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._rng = random.Random()
        self._state = CountState()
        self._draws: list[int] = []

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self._rng = random.Random(seed)
        self._state = CountState(episode_id=episode_id)
        self._draws = []
        return CountObservation(reward=0.0)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        draw = self._rng.randint(0, 9)
        self._draws.append(draw)
        self._state.step_count += 1
        self._state.total += action.amount + draw
        return CountObservation(total=self._state.total, draws=list(self._draws), reward=float(draw))

    @property
    def state(self) -> CountState:
        return self._state


class UnseededCountEnv(CountEnv):
    """An openenv-core env whose reset takes no seed."""

    def reset(self, episode_id: str | None = None) -> CountObservation:  # type: ignore[override]
        return super().reset(seed=0, episode_id=episode_id)


QUIZ = {
    "train": [{"id": f"train-{n}", "question": f"{n} + {n}", "answer": 2 * n} for n in range(4)],
    "test": [{"id": f"test-{n}", "question": f"{n} * {n}", "answer": n * n} for n in range(2)],
}


class QuizEnv(Environment):
    """A dataset-backed environment with the task methods of the env API: a reset picks a
    task by split and index."""

    def __init__(self) -> None:
        self._task: dict[str, Any] | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def list_splits(self) -> list[Any]:
        return ["train", {"name": "test", "type": "test"}]

    def num_tasks(self, split: str) -> int:
        return len(QUIZ[split])

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return {key: value for key, value in QUIZ[split][index].items() if key != "answer"}

    async def list_tasks(self, split: str) -> list[Any]:
        return [self.get_task(split, 0)]  # a bounded preview

    def reset(
        self, split: str = "train", index: int = 0, seed: int | None = None, episode_id: str | None = None
    ) -> dict[str, Any]:
        self._task, self._episode_id, self._steps = QUIZ[split][index], episode_id, 0
        return {"question": self._task["question"], "task_id": self._task["id"], "seed": seed}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        assert self._task is not None
        self._steps += 1
        return {"reward": float(action.get("answer") == self._task["answer"]), "done": True}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "step_count": self._steps}


class HugeTaskEnv(QuizEnv):
    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return {"id": "huge", "blob": "x" * (1024 * 1024)}


class BrokenTaskEnv(QuizEnv):
    def num_tasks(self, split: str) -> int:
        raise RuntimeError("the dataset is offline")

    def list_tasks(self, split: str) -> list[Any]:  # type: ignore[override]
        raise NotImplementedError


class CoreQuizEnv(CountEnv):
    """An openenv-core environment with upstream's task methods (TaskProvider)."""

    def list_splits(self) -> list[str]:
        return ["train", "test"]

    def num_tasks(self, split: str) -> int:
        return len(QUIZ[split])

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return {"id": QUIZ[split][index]["id"]}

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        return [{"id": task["id"]} for task in QUIZ[split][start:stop]]

    def reset(  # type: ignore[override]
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str = "train",
        index: int = 0,
        **kwargs: Any,
    ) -> CountObservation:
        observation = super().reset(seed=seed, episode_id=episode_id)
        observation.total = index
        observation.metadata = {"task": QUIZ[split][index]["id"]}
        return observation
