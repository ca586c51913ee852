"""``GenericEnvClient``: upstream's dictionary client (no typed models needed), on our client.

async with GenericEnvClient(base_url=url) as env:
    await env.step({"type": "list_tools"})      # any action a server accepts, before reset too
    result = await env.reset()                  # StepResult(observation=dict, ...)
"""

from __future__ import annotations

from typing import Any

from .env_client import EnvClient
from .results import StepResult

__all__ = ["GenericAction", "GenericEnvClient", "as_dict"]


def as_dict(action: Any) -> dict[str, Any] | None:
    """``action`` as a dict when it is one or a pydantic model, else None."""
    if isinstance(action, dict):
        return action
    dump = getattr(action, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump()
        return dumped
    return None


class GenericEnvClient(EnvClient[dict[str, Any], dict[str, Any], dict[str, Any]]):
    """A client on plain dictionaries: actions, observations and states are dicts."""

    def _step_payload(self, action: Any) -> dict[str, Any]:
        dumped = as_dict(action)
        if dumped is not None:
            return dumped
        if hasattr(action, "__dict__"):
            return dict(vars(action))
        return dict(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict[str, Any]]:
        return StepResult(
            observation=payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


class GenericAction(dict[str, Any]):
    """An action for :class:`GenericEnvClient` written with keywords: ``GenericAction(code="x = 1")``."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(fields)

    def __repr__(self) -> str:
        return "GenericAction(" + ", ".join(f"{key}={value!r}" for key, value in self.items()) + ")"
