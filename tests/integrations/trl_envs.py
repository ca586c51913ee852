"""Small environments the TRL factory tests serve: one with MCP tools, one stepped by an action
schema with the shapes a model's tool call can carry, and one whose action no signature can say."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from openenv_anyio import Environment
from openenv_anyio.tools import tool


class Ledger(Environment):
    """An account book: deposit, withdraw, look up; a step reports the balance."""

    def __init__(self) -> None:
        self.entries: list[int] = []
        self.episode_id: str | None = None
        self.steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.entries = [seed or 0]
        self.steps = 0
        self.episode_id = episode_id or str(uuid.uuid4())
        return {"balance": sum(self.entries)}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"balance": sum(self.entries), "reward": float(sum(self.entries))}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    @tool(
        parameters={
            "type": "object",
            "properties": {
                "amount": {"type": "integer", "minimum": 1, "description": "how much to put in"},
                "memo": {"type": ["string", "null"], "description": "a note kept with the entry"},
            },
            "required": ["amount"],
            "additionalProperties": False,
        }
    )
    def deposit(self, amount: int, memo: str | None = None) -> int:
        """Put money in the account; returns the balance."""
        self.entries.append(amount)
        return sum(self.entries)

    @tool
    def withdraw(self, amount: int) -> dict[str, Any]:
        """Take money out of the account."""
        self.entries.append(-amount)
        return {"balance": sum(self.entries), "entries": len(self.entries)}

    @tool(
        parameters={
            "type": "object",
            "properties": {"kind": {"enum": ["deposits", "withdrawals"], "description": "which entries"}},
            "additionalProperties": False,
        }
    )
    def entries_of(self, kind: str = "deposits") -> list[int]:
        """The entries of one kind, oldest first."""
        return [e for e in self.entries[1:] if (e > 0) == (kind == "deposits")]


MOVE_SCHEMA: dict[str, Any] = {
    "title": "Move",
    "description": "A move on the board.",
    "type": "object",
    "properties": {
        "direction": {"enum": ["up", "down", "left", "right"], "description": "where to go"},
        "steps": {"type": "integer", "minimum": 1, "default": 1, "description": "how far"},
        "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "description": "waypoints"},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}, "description": "labels"},
        "metadata": {"type": "object", "description": "kept from upstream's Action models"},
    },
    "required": ["direction"],
    "additionalProperties": False,
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}},
}


class Board(Environment):
    """A walk on an unbounded board; the reward is minus the distance from the start."""

    NON_BLOCKING = True
    action_schema = MOVE_SCHEMA

    def __init__(self) -> None:
        self.x = self.y = self.steps = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.x = self.y = self.steps = 0
        return {"x": 0, "y": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        dx, dy = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}[action["direction"]]
        far = action.get("steps", 1)
        self.x, self.y, self.steps = self.x + dx * far, self.y + dy * far, self.steps + 1
        return {
            "x": self.x,
            "y": self.y,
            "waypoints": len(action.get("path", [])),
            "tags": sorted(action.get("tags", {})),
            "reward": -float(abs(self.x) + abs(self.y)),
            "done": abs(self.x) + abs(self.y) >= 5,
        }

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.steps}


class Tagged(Board):
    """Its actions are a union of shapes: no single signature says them."""

    action_schema: ClassVar[dict[str, Any]] = {
        "anyOf": [
            {"type": "object", "properties": {"direction": {"enum": ["up", "down"]}}, "required": ["direction"]},
            {"type": "object", "properties": {"wait": {"type": "boolean"}}, "required": ["wait"]},
        ]
    }


class HyphenatedLedger(Ledger):
    """A ledger with one more tool, whose parameter name no Python keyword argument can carry."""

    @tool(parameters={"type": "object", "properties": {"account-id": {"type": "string"}}, "required": ["account-id"]})
    def lookup(self, **arguments: Any) -> str:
        """Look an account up."""
        return str(arguments["account-id"])


class Tally(Environment):
    """Tools only: count up to a target; a ``reward`` tool scores the episode (1.0 on target)."""

    NON_BLOCKING = True

    def __init__(self) -> None:
        self.tally, self.target = 0, 3

    def reset(self, seed: int | None = None, **kwargs: Any) -> dict[str, Any]:
        self.tally, self.target = 0, seed or 3
        return {"target": self.target}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"tally": self.tally, "reward": 0.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}

    @tool
    def add(self, amount: int) -> int:
        """Add to the tally; returns the new tally."""
        self.tally += amount
        return self.tally

    @tool
    def reward(self) -> float:
        """1.0 when the tally is the target, else 0.0."""
        return 1.0 if self.tally == self.target else 0.0


class WordyTally(Tally):
    """Its ``reward`` tool answers words, not a number."""

    @tool
    def reward(self) -> str:  # type: ignore[override]
        """How it went."""
        return "well done"
