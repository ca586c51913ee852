"""Typed clients on upstream's base classes (imports from ``openenv.core``)."""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.mcp_client import MCPToolClient


class TinyPkgAction(Action):
    message: str


class TinyPkgObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class _TinyBase(EnvClient[TinyPkgAction, TinyPkgObservation, State]):
    """A shared base in the package: the concrete client extends its hooks with super()."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url=base_url, **kwargs)
        self.parsed = 0

    def _step_payload(self, action: TinyPkgAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TinyPkgObservation]:
        observed = payload.get("observation", {})
        observation = TinyPkgObservation(
            echoed_message=observed.get("echoed_message", ""),
            message_length=observed.get("message_length", 0),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class TinyPkgEnv(_TinyBase):
    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TinyPkgObservation]:
        self.parsed += 1
        return super()._parse_result(payload)

    def shout(self, text: str) -> Any:
        """A method of the package's own, built on the public API."""
        return self.step(TinyPkgAction(message=text.upper()))


class NotesPkgEnv(MCPToolClient):
    async def remember_all(self, *texts: str) -> list[Any]:
        return [await self.call_tool("remember", text=text) for text in texts]
