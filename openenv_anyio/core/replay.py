"""Bringing an episode back by replay, sans-IO: what is recorded, and the check of a replay.

A deterministic environment (``DETERMINISTIC = True``, ``openenv_anyio.restoration``) is
brought back in another process by a fresh instance reset with the recorded arguments and
stepped with the recorded actions. Its answers must be the recorded ones: a replay that
answers otherwise is a different episode, and it ends with :class:`ReplayMismatch`
(``REPLAY_MISMATCH``), never silently.

Theory of operation. While a session runs, its :class:`EpisodeLog` records the episode's
reset arguments and every step's action, and of every answer only its digest
(:func:`answer_digest`: SHA-256 of the answer's canonical JSON, so a long episode costs 32
bytes a step besides its actions). A reset starts a new log. To bring the episode back, a
:class:`ReplayCheck` over the log says which call to make next (:meth:`ReplayCheck.next_call`:
the reset, then each step in order) and checks each answer (:meth:`ReplayCheck.check`)::

    check = ReplayCheck(log)
    while (call := check.next_call()) is not None:
        answer = run(call)            # the caller runs it on the fresh environment
        check.check(answer)           # ReplayMismatch at the first answer that differs

Its phases and their transitions are :data:`_TRANSITIONS`; a check that failed stays
failed. Answers are compared as the JSON the protocol sends (the ``data`` of the
observation frame: observation, reward, done, metadata): the caller gives them in that
plain form, as it records them.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, assert_never

from .errors import ErrorCode, ProtocolError

__all__ = [
    "EpisodeLog",
    "RecordedStep",
    "ReplayCall",
    "ReplayCheck",
    "ReplayMismatch",
    "ReplayPhase",
    "answer_digest",
]


def answer_digest(answer: Any) -> str:
    """SHA-256 (hex) of ``answer``'s canonical JSON: sorted keys, no spaces; a non-finite
    float is written as JavaScript's name for it, so that a NaN equals itself here."""
    text = json.dumps(answer, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RecordedStep:
    """One step of a recorded episode: its action and its answer's digest."""

    action: Any
    answer: str


@dataclass(slots=True)
class EpisodeLog:
    """The record of one episode that a replay brings back: the reset's arguments and
    answer digest, then each step."""

    reset: dict[str, Any]
    reset_answer: str
    steps: list[RecordedStep] = field(default_factory=list)

    @classmethod
    def start(cls, reset: Mapping[str, Any], answer: Any) -> EpisodeLog:
        """A new log: the episode began with ``reset(**reset)``, which answered ``answer``."""
        return cls(dict(reset), answer_digest(answer))

    def record_step(self, action: Any, answer: Any) -> None:
        """A step: ``action`` as the client sent it (the step frame's JSON ``data``, not a
        model instance built from it) and its answer (plain JSON, as :func:`answer_digest` takes)."""
        self.steps.append(RecordedStep(action, answer_digest(answer)))

    def to_json(self) -> dict[str, Any]:
        """The log as a JSON object (for a session store)."""
        return {
            "reset": self.reset,
            "reset_answer": self.reset_answer,
            "steps": [[step.action, step.answer] for step in self.steps],
        }

    @classmethod
    def from_json(cls, value: Any) -> EpisodeLog:
        """The log :meth:`to_json` wrote; :class:`ValueError` for anything else."""
        if not isinstance(value, Mapping):
            raise ValueError("an episode log is an object")
        reset, reset_answer, steps = value.get("reset"), value.get("reset_answer"), value.get("steps")
        if not isinstance(reset, dict) or not isinstance(reset_answer, str) or not isinstance(steps, list):
            raise ValueError("an episode log has reset (object), reset_answer (string) and steps (array)")
        recorded = []
        for index, step in enumerate(steps):
            if not (isinstance(step, list) and len(step) == 2 and isinstance(step[1], str)):
                raise ValueError(f"step {index} of the episode log is not [action, digest]")
            recorded.append(RecordedStep(step[0], step[1]))
        return cls(reset, reset_answer, recorded)


class ReplayPhase(enum.Enum):
    """Where a replay check is."""

    RESET = "reset"  # the reset is to be made
    STEPS = "steps"  # the reset answered as recorded: the steps are to be made, in order
    DONE = "done"  # every call answered as recorded: the episode is back
    FAILED = "failed"  # an answer differed: the episode cannot come back


#: phase -> the phases it may move to (a test walks it).
_TRANSITIONS: Final[dict[ReplayPhase, frozenset[ReplayPhase]]] = {
    ReplayPhase.RESET: frozenset({ReplayPhase.STEPS, ReplayPhase.DONE, ReplayPhase.FAILED}),
    ReplayPhase.STEPS: frozenset({ReplayPhase.STEPS, ReplayPhase.DONE, ReplayPhase.FAILED}),
    ReplayPhase.DONE: frozenset(),
    ReplayPhase.FAILED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """The next call of a replay: ``reset(**arguments)`` when ``step`` is None, else step
    number ``step`` (from 1) with ``action``."""

    step: int | None
    arguments: Mapping[str, Any]
    action: Any = None


class ReplayMismatch(ProtocolError):
    """A replayed answer differs from the recorded one (``REPLAY_MISMATCH``): the episode
    the environment is in is not the one the session was in."""

    def __init__(self, step: int | None, total: int) -> None:
        where = "the reset" if step is None else f"step {step} of {total}"
        super().__init__(
            ErrorCode.REPLAY_MISMATCH,
            f"replaying {where} gave another answer than the recorded one: the episode cannot be brought back",
        )
        self.step = step


class ReplayCheck:
    """The check of one replay over an :class:`EpisodeLog` (see the module docstring)."""

    __slots__ = ("_log", "_next", "phase")

    def __init__(self, log: EpisodeLog) -> None:
        self._log = log
        self._next = 0  # steps checked so far
        self.phase = ReplayPhase.RESET

    def _move(self, phase: ReplayPhase) -> None:
        assert phase in _TRANSITIONS[self.phase], (self.phase, phase)
        self.phase = phase

    def next_call(self) -> ReplayCall | None:
        """The call to make next, or None once the replay is over (done or failed)."""
        match self.phase:
            case ReplayPhase.RESET:
                return ReplayCall(None, self._log.reset)
            case ReplayPhase.STEPS:
                return ReplayCall(self._next + 1, {}, self._log.steps[self._next].action)
            case ReplayPhase.DONE | ReplayPhase.FAILED:
                return None
            case unreachable:
                assert_never(unreachable)

    def check(self, answer: Any) -> None:
        """Check the answer to the call :meth:`next_call` gave; :class:`ReplayMismatch` when
        it differs from the recorded one (the check is then failed for good)."""
        match self.phase:
            case ReplayPhase.RESET:
                expected, step = self._log.reset_answer, None
            case ReplayPhase.STEPS:
                expected, step = self._log.steps[self._next].answer, self._next + 1
            case ReplayPhase.DONE | ReplayPhase.FAILED:
                raise RuntimeError(f"no call is waiting for its answer: the replay is {self.phase.value}")
            case unreachable:
                assert_never(unreachable)
        if answer_digest(answer) != expected:
            self._move(ReplayPhase.FAILED)
            raise ReplayMismatch(step, len(self._log.steps))
        if step is not None:
            self._next += 1
        self._move(ReplayPhase.STEPS if self._next < len(self._log.steps) else ReplayPhase.DONE)
