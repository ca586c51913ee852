"""What the client's requests return: ``StepResult``, ``State`` and ``Tool``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import Observation
from ..core.slot_setters import new_instance, slot_setters

__all__ = ["State", "StepResult", "Tool"]


@dataclass(frozen=True, slots=True)
class StepResult:
    """The answer to ``reset`` and ``step`` (an observation frame's ``data``, WS-OBS-1)."""

    observation: dict[str, Any]
    reward: float | bool | None = None
    done: bool = False
    #: the environment's metadata for this observation when the server sends it (WS-OBS-2)
    metadata: dict[str, Any] | None = None

    @classmethod
    def of(cls, frame: Observation) -> StepResult:
        metadata = frame.metadata
        observation = dict(frame.observation)
        metadata = None if metadata is None else dict(metadata)
        if cls is not StepResult:  # a subclass may have more fields: its own constructor
            return cls(observation, frame.reward, frame.done, metadata)
        # one per step: its slots set directly (bench/README.md, "Client CPU per step")
        result: StepResult = new_instance(StepResult)
        _result_observation(result, observation)
        _result_reward(result, frame.reward)
        _result_done(result, frame.done)
        _result_metadata(result, metadata)
        return result


_result_observation, _result_reward, _result_done, _result_metadata = slot_setters(StepResult)


@dataclass(frozen=True, slots=True)
class State:
    """The answer to ``state`` (WS-STATE-1); ``extra`` holds the environment's other keys."""

    episode_id: str | None
    step_count: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool of the environment (``tools/list``, MCP-RPC-2); ``extra`` holds other members."""

    name: str
    description: str
    input_schema: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, listing: Mapping[str, Any]) -> Tool:
        extra = {key: value for key, value in listing.items() if key not in ("name", "description", "inputSchema")}
        return cls(
            str(listing["name"]), str(listing.get("description") or ""), dict(listing.get("inputSchema") or {}), extra
        )
