"""What ``GET /metadata`` and ``GET /schema`` say about the served environment.

``/metadata`` also says how a session's episode can be brought back after a restart
(``restore``: ``snapshot``, ``replay`` or ``none``, see ``openenv_anyio.restoration``).

Read from the factory when it is a class; otherwise (a function or partial, whose instances may
carry their own schemas) one instance is built, read and closed, once. Undeclared schemas fall
back to permissive ones; an undeclared reset observation schema is the observation schema.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from ...environment import EnvFactory, env_metadata, has_web_hooks, schema_of
from ...restoration import restore_way
from ..execution.bound_env import BoundEnv

__all__ = ["DEFAULT_SCHEMAS", "EnvProfile"]

DEFAULT_SCHEMAS: dict[str, dict[str, Any]] = {
    "action": {"type": "object", "title": "Action"},
    "observation": {"type": "object", "title": "Observation"},
    "state": {
        "type": "object",
        "title": "State",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
        },
        "required": ["episode_id", "step_count"],
    },
}


def _describe(source: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    declared = {
        key: schema_of(getattr(source, f"{key}_schema", None)) or DEFAULT_SCHEMAS[key] for key in DEFAULT_SCHEMAS
    }
    reset_observation = schema_of(getattr(source, "reset_observation_schema", None)) or declared["observation"]
    schemas = {  # HTTP-3: openenv 0.10's order and members
        "action": declared["action"],
        "observation": declared["observation"],
        "reset_observation": reset_observation,
        "state": declared["state"],
    }
    metadata = env_metadata(source)
    metadata["restore"] = restore_way(source).value
    return metadata, schemas


class ProfiledServer(Protocol):
    """What the profile reads of its server: the factory, and an environment to ask."""

    @property
    def factory(self) -> EnvFactory: ...

    def fresh_env(self, *, counted: bool = True) -> AbstractAsyncContextManager[BoundEnv]: ...


class EnvProfile:
    """The served environment's metadata and schemas (computed once)."""

    def __init__(self, ctx: ProfiledServer) -> None:
        self._ctx = ctx
        self._cached: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._web_hooks = False

    async def describe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(metadata, {"action": ..., "observation": ..., "reset_observation": ..., "state": ...})``."""
        if self._cached is None:
            factory = self._ctx.factory
            if isinstance(factory, type):
                self._cached, self._web_hooks = _describe(factory), has_web_hooks(factory)
            else:  # a factory function or partial: its instances may carry their own schemas
                async with self._ctx.fresh_env(counted=False) as bound:  # once per server
                    self._cached, self._web_hooks = _describe(bound.env), has_web_hooks(bound.env)
        return self._cached

    async def web_hooks(self) -> bool:
        """Whether the environment draws itself in the playground (``render_web``, ``web_actions``)."""
        await self.describe()
        return self._web_hooks
