"""The Shout environment's models: a rule of the action's own (upper case) that its JSON
Schema cannot say, and observation and state fields beyond upstream's base models."""

from __future__ import annotations

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, field_validator


class ShoutAction(Action):
    """A message to shout: upper case only."""

    message: str = Field(min_length=1, description="what to shout (upper case)")

    @field_validator("message")
    @classmethod
    def _upper_case(cls, value: str) -> str:
        if value != value.upper():
            raise ValueError("must be upper case")
        return value


class ShoutObservation(Observation):
    """The echo of a shout."""

    echoed: str = ""
    volume: int = 0


class ShoutState(State):
    """The episode so far."""

    shouted: int = 0
