"""``GuessNumberEnv``: guess a secret integer with higher/lower hints.

A small but complete environment: it has state (the secret, guesses left), a reward
(+1 for the right guess, -0.1 for each wrong one) and termination (solved, or out of
guesses). Its calls are pure CPU work of microseconds, so it declares ``NON_BLOCKING``.

Action ``{"guess": int}``; observation ``{"hint", "guesses_left", "last_guess", "low",
"high"}`` where ``hint`` is ``"start"``, ``"higher"``, ``"lower"``, ``"correct"`` or
``"out_of_guesses"``. ``reset(seed=..., low=1, high=100, max_guesses=7)``.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, ClassVar

from ..environment import Environment

__all__ = ["GuessNumberEnv"]


class GuessNumberEnv(Environment):
    """Find the secret number in at most ``max_guesses`` guesses."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "title": "GuessAction",
        "properties": {"guess": {"type": "integer", "description": "Your guess."}},
        "required": ["guess"],
        "additionalProperties": False,
    }
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "title": "GuessObservation",
        "properties": {
            "hint": {"enum": ["start", "higher", "lower", "correct", "out_of_guesses"]},
            "guesses_left": {"type": "integer", "minimum": 0},
            "last_guess": {"type": ["integer", "null"]},
            "low": {"type": "integer"},
            "high": {"type": "integer"},
        },
        "required": ["hint", "guesses_left", "last_guess", "low", "high"],
    }
    state_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "title": "GuessState",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
            "guesses_left": {"type": "integer", "minimum": 0},
            "solved": {"type": "boolean"},
        },
        "required": ["episode_id", "step_count"],
    }
    metadata: ClassVar[dict[str, Any]] = {
        "name": "GuessNumberEnv",
        "description": "Guess a secret integer; hints say higher or lower.",
        "version": "1.0.0",
    }

    def __init__(self) -> None:
        self.reset()
        self._episode_id: str | None = None

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        low: int = 1,
        high: int = 100,
        max_guesses: int = 7,
        **_: Any,
    ) -> dict[str, Any]:
        if low > high:
            raise ValueError(f"low ({low}) must not exceed high ({high})")
        self._rng = random.Random(seed)
        self._secret = self._rng.randint(low, high)
        self._low, self._high = low, high
        self._guesses_left = max_guesses
        self._episode_id = episode_id or str(uuid.uuid4())
        self._step_count = 0
        self._solved = False
        return self._observation("start", None, reward=0.0, done=False)

    def _observation(self, hint: str, guess: int | None, *, reward: float, done: bool) -> dict[str, Any]:
        return {
            "hint": hint,
            "guesses_left": self._guesses_left,
            "last_guess": guess,
            "low": self._low,
            "high": self._high,
            "reward": reward,
            "done": done,
        }

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        guess = int(action["guess"])
        if self._solved or self._guesses_left == 0:
            hint = "correct" if self._solved else "out_of_guesses"
            return self._observation(hint, guess, reward=0.0, done=True)
        self._step_count += 1
        self._guesses_left -= 1
        if guess == self._secret:
            self._solved = True
            return self._observation("correct", guess, reward=1.0, done=True)
        hint = "higher" if guess < self._secret else "lower"
        if self._guesses_left == 0:
            return self._observation("out_of_guesses", guess, reward=-0.1, done=True)
        return self._observation(hint, guess, reward=-0.1, done=False)

    @property
    def state(self) -> dict[str, Any]:
        return {
            "episode_id": self._episode_id,
            "step_count": self._step_count,
            "guesses_left": self._guesses_left,
            "solved": self._solved,
        }
