"""Environments a newcomer might hand to ``openenv-anyio serve`` by mistake."""

from __future__ import annotations

from typing import Any


class NeedsArguments:
    """Cannot be built without arguments (a factory was meant)."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {}


class NoStep:
    """Has ``reset`` but no ``step``."""

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}
