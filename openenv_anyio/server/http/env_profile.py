"""What ``GET /metadata`` and ``GET /schema`` say about the served environment.

Read from the factory when it is a class; otherwise (a function or partial, whose instances may
carry their own schemas) one instance is built, read and closed, once. Undeclared schemas fall back to permissive ones.
"""

from __future__ import annotations

from typing import Any

from ...environment import env_metadata, schema_of
from ..context import ServerContext

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
    schemas = {
        key: schema_of(getattr(source, f"{key}_schema", None)) or DEFAULT_SCHEMAS[key]
        for key in DEFAULT_SCHEMAS
    }
    return env_metadata(source), schemas


class EnvProfile:
    """The served environment's metadata and schemas (computed once)."""

    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        self._cached: tuple[dict[str, Any], dict[str, Any]] | None = None

    async def describe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(metadata, {"action": ..., "observation": ..., "state": ...})``."""
        if self._cached is None:
            factory = self._ctx.factory
            if isinstance(factory, type):
                self._cached = _describe(factory)
            else:  # a factory function or partial: its instances may carry their own schemas
                async with self._ctx.fresh_env(counted=False) as bound:  # once per server
                    self._cached = _describe(bound.env)
        return self._cached
