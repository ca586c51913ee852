"""Environments made for the server tests: each exposes one behaviour to check."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import pydantic
import trio

from openenv_anyio.environment import Environment


class Tracked(Environment):
    """Counts live instances and records the thread of every call (thread affinity)."""

    live: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()
    closed: ClassVar[int] = 0
    #: the name of every thread an instance was made on (a new session thread has a new name)
    made_on: ClassVar[set[str]] = set()

    def __init__(self) -> None:
        with Tracked.lock:
            Tracked.live += 1
            Tracked.made_on.add(threading.current_thread().name)
        self.threads: list[int] = [threading.get_ident()]
        self.steps = 0
        self.episode_id: str | None = None

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.threads.append(threading.get_ident())
        self.steps = 0
        self.episode_id = kwargs.get("episode_id", "ep")
        return {"threads": sorted(set(self.threads)), "reward": 0.0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.threads.append(threading.get_ident())
        self.steps += 1
        if action.get("sleep"):
            time.sleep(float(action["sleep"]))
        if action.get("raise"):
            raise ValueError(str(action["raise"]))
        return {"threads": sorted(set(self.threads)), "reward": 1.0, "done": False}

    @property
    def state(self) -> dict[str, Any]:
        self.threads.append(threading.get_ident())
        return {"episode_id": self.episode_id, "step_count": self.steps, "threads": sorted(set(self.threads))}

    def close(self) -> None:
        with Tracked.lock:
            Tracked.live -= 1
            Tracked.closed += 1


class InlineTracked(Tracked):
    NON_BLOCKING: ClassVar[bool] = True


class AsyncEnv:
    """Duck-typed, every method ``async def``; ``state`` is a method."""

    NON_BLOCKING = False

    def __init__(self) -> None:
        self.count = 0
        self.closed = False

    async def reset(self, **kwargs: Any) -> dict[str, Any]:
        await trio.sleep(0)
        self.count = 0
        return {"kind": "async", "thread": threading.get_ident()}

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(float(action.get("sleep", 0)))
        self.count += 1
        return {"kind": "async", "count": self.count, "thread": threading.get_ident(), "reward": self.count}

    async def state(self) -> dict[str, Any]:
        return {"episode_id": "async-ep", "step_count": self.count}

    async def close(self) -> None:
        self.closed = True


def failing_factory() -> Any:
    raise RuntimeError("no environment today")


class Move(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    dx: int
    dy: int = 0


class PydanticEnv(Environment):
    """Declares its action as a pydantic model: ``step`` receives a ``Move``."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[type] = Move

    def __init__(self) -> None:
        self.x = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.x = 0
        return {"x": 0}

    def step(self, action: Move) -> dict[str, Any]:
        assert isinstance(action, Move), type(action)
        self.x += action.dx
        return {"x": self.x, "action_type": type(action).__name__, "reward": float(self.x)}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


class PlainResetEnv(InlineTracked):
    """``reset`` takes no parameters: the server drops the ones a client sends."""

    def reset(self) -> dict[str, Any]:  # type: ignore[override]
        return {"plain": True}


class PeakCounter(Environment):
    """Records the most instances alive at once (``peak``); ``{"sleep": S}`` holds a step."""

    live: ClassVar[int] = 0
    peak: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        with PeakCounter.lock:
            PeakCounter.live += 1
            PeakCounter.peak = max(PeakCounter.peak, PeakCounter.live)

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(float(action.get("sleep", 0)))
        return {"threads": threading.active_count()}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}

    def close(self) -> None:
        with PeakCounter.lock:
            PeakCounter.live -= 1


class Welcome(pydantic.BaseModel):
    """What a reset of :class:`BoardEnv` answers: an empty board and a greeting."""

    board: list[str]
    message: str


class BoardView(pydantic.BaseModel):
    """What a step of :class:`BoardEnv` answers: the board and whose turn it is."""

    board: list[str]
    turn: str


class BoardEnv(Environment):
    """Noughts and crosses against nobody: X and O take turns on nine cells. Declares its reset
    observation apart from a step's, and draws itself in the playground with both web hooks."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[Any] = {
        "type": "object",
        "properties": {"cell": {"type": "integer", "minimum": 0, "maximum": 8, "examples": [4]}},
        "required": ["cell"],
        "additionalProperties": False,
    }
    observation_schema: ClassVar[type] = BoardView
    reset_observation_schema: ClassVar[type] = Welcome

    def __init__(self) -> None:
        self.board = [""] * 9
        self.steps = 0
        self.episode_id: str | None = None

    def reset(self, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.board = [""] * 9
        self.steps = 0
        self.episode_id = episode_id
        return {"board": self.board.copy(), "message": "X to play", "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        cell = action["cell"]
        if self.board[cell]:
            raise ValueError(f"cell {cell} is taken")
        self.board[cell] = "XO"[self.steps % 2]
        self.steps += 1
        return {"board": self.board.copy(), "turn": "XO"[self.steps % 2], "reward": 0.0, "done": all(self.board)}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    def render_web(self, observation: Mapping[str, Any]) -> str | None:
        cells = "".join(
            f'<td class="cell" data-cell="{index}">{mark or "&nbsp;"}</td>' + ("</tr><tr>" if index in (2, 5) else "")
            for index, mark in enumerate(observation["board"])
        )
        return (
            "<style>td{border:1px solid #333;width:2em;height:2em;text-align:center}</style>"
            f'<table id="board"><tr>{cells}</tr></table>'
        )

    def web_actions(self, observation: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        return [(f"play {index}", {"cell": index}) for index, mark in enumerate(observation["board"]) if not mark]
