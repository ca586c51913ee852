"""Which reset keywords an environment accepts (answered once per function, per class)."""

from __future__ import annotations

from typing import Any

from openenv_anyio.server.execution.bound_env import accepted_keywords


class Named:
    def reset(self, seed: int | None = None, *, episode_id: str | None = None) -> None: ...


class Open:
    def reset(self, **kwargs: Any) -> None: ...


class Narrow(Named):
    def reset(self, seed: int | None = None) -> None:  # type: ignore[override]
        ...


def test_each_function_gets_its_own_answer_every_time() -> None:
    for _ in range(3):  # the second and third answers come from the cache
        assert accepted_keywords(Named().reset) == {"seed", "episode_id"}
        assert accepted_keywords(Open().reset) is None
        assert accepted_keywords(Narrow().reset) == {"seed"}
    assert accepted_keywords(lambda low=0, high=1: None) == {"low", "high"}
    assert accepted_keywords(len) == frozenset()  # a builtin: positional only
