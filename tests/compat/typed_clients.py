"""Typed clients written the way upstream's are (pydantic action and observation, the three
hooks), on ``openenv_anyio.compat``'s base: what a user has after changing one import."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from openenv_anyio.compat import EnvClient, MCPToolClient, State, StepResult


class TinyAction(BaseModel):
    message: str


class TinyObservation(BaseModel):
    echoed_message: str = ""
    message_length: int = 0
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = {}


class TinyEnv(EnvClient[TinyAction, TinyObservation, State]):
    def _step_payload(self, action: TinyAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TinyObservation]:
        observation = TinyObservation(
            **{k: v for k, v in payload.get("observation", {}).items() if k in TinyObservation.model_fields},
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class NotesClient(MCPToolClient):
    """A tool environment's client: upstream's are often nothing more than this."""
