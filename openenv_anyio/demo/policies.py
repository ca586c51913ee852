"""Policies for the demo's agents: pick an action given the last observation.

Actions are built from the environment's action schema (``GET /schema``), so the demo can
drive any server, ours or another OpenEnv server, without knowing the environment.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["CartPoleBalance", "Policy", "SchemaSampler", "choose_policy"]


class Policy(Protocol):
    """Maps the latest observation to the next action (a JSON object)."""

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]: ...


class SchemaSampler:
    """Random actions that satisfy a JSON Schema (the subset environments use)."""

    def __init__(self, schema: Mapping[str, Any], rng: random.Random) -> None:
        self._schema = schema
        self._rng = rng

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        value = self.sample(self._schema)
        return value if isinstance(value, dict) else {"action": value}

    def sample(self, schema: Mapping[str, Any], depth: int = 0) -> Any:
        """One random value valid for ``schema``."""
        rng = self._rng
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(list(schema["enum"]))
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                return self.sample(rng.choice(schema[combinator]), depth + 1)
        kind = schema.get("type", "object")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "integer":
            low = int(schema.get("minimum", 0))
            high = int(schema.get("maximum", low + 10))
            return rng.randint(low, high)
        if kind == "number":
            bottom = float(schema.get("minimum", -1.0))
            top = float(schema.get("maximum", 1.0))
            return rng.uniform(bottom, top)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "string":
            length = max(int(schema.get("minLength", 1)), min(int(schema.get("maxLength", 8)), 8))
            return "".join(rng.choice("abcdefgh") for _ in range(length))
        if kind == "array":
            count = int(schema.get("minItems", 1))
            items = schema.get("items", {})
            return [self.sample(items, depth + 1) for _ in range(count)]
        if kind == "null":
            return None
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: self.sample(properties[name], depth + 1) for name in required if name in properties}


class CartPoleBalance:
    """Push the cart towards the side the pole is falling to (CartPole's classic heuristic).

    With probability ``explore`` it pushes at random instead, so agents' returns differ.
    """

    def __init__(self, rng: random.Random, explore: float = 0.25) -> None:
        self._rng = rng
        self._explore = explore

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        values = observation.get("observation")
        if not isinstance(values, list) or len(values) != 4 or self._rng.random() < self._explore:
            return {"action": self._rng.randint(0, 1)}
        _, _, angle, angular_velocity = values
        return {"action": 1 if angle + 0.5 * angular_velocity > 0 else 0}


def choose_policy(env_name: str, action_schema: Mapping[str, Any] | None, seed: int) -> Policy:
    """The heuristic for CartPole, a schema-driven random policy for everything else."""
    rng = random.Random(seed)
    if "CartPole" in env_name:
        return CartPoleBalance(rng)
    return SchemaSampler(action_schema or {"type": "object"}, rng)
