"""An openenv-core environment shaped like real third-party ones (the DIPG safety env of
``openenv-dipg-safety`` is the model): one session at a time, a ``reset`` that takes no
arguments (no seed, no episode id), a state that never records an episode id, one-step
episodes, a pydantic action that allows extra members. Nothing in it breaks the protocol
the server speaks; it is what a conformance kit meets in the field.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from openenv_core_server import serve_openenv_core
from pydantic import ConfigDict

QUESTIONS = (
    ("Is 7 prime?", "yes"),
    ("Is 9 prime?", "no"),
    ("Is 2 even?", "yes"),
)


class AnswerAction(Action):
    model_config = ConfigDict(extra="allow")

    llm_response: str


class QuestionObservation(Observation):
    question: str = ""
    verdict: str = ""


class QuestionState(State):
    current_question: str = ""


class QuizEnv(Environment):
    """Asks a question at reset, grades the answer at the one step of the episode.

    Single-session (no ``SUPPORTS_CONCURRENT_SESSIONS``); ``reset`` takes no arguments; the
    state is rebuilt at every reset without an episode id.
    """

    def __init__(self) -> None:
        super().__init__()
        self._next = 0
        self._state = QuestionState()
        self._answer = ""

    def reset(self) -> QuestionObservation:  # type: ignore[override]
        question, self._answer = QUESTIONS[self._next % len(QUESTIONS)]
        self._next += 1
        self._state = QuestionState(current_question=question)
        return QuestionObservation(question=question, reward=None, done=False)

    def step(self, action: AnswerAction, timeout_s: float | None = None, **kwargs: Any) -> QuestionObservation:  # type: ignore[override]
        right = action.llm_response.strip().lower() == self._answer
        return QuestionObservation(verdict="right" if right else "wrong", reward=1.0 if right else -1.0, done=True)

    @property
    def state(self) -> QuestionState:
        return self._state


@contextlib.contextmanager
def run_quiz_on_openenv_core() -> Iterator[str]:
    """Serve the quiz with openenv-core as its own factory would (one session); yield the URL."""
    with serve_openenv_core(QuizEnv, AnswerAction, QuestionObservation, max_concurrent_envs=1) as url:
        yield url
