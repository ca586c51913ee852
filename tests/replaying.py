"""Replaying a recorded episode on an environment, the way a server brings one back."""

from __future__ import annotations

from typing import Any, Protocol

from openenv_anyio.core.replay import EpisodeLog, ReplayCheck


class SyncEnv(Protocol):
    def reset(self, **kwargs: Any) -> Any: ...

    def step(self, action: Any) -> Any: ...


def replay(log: EpisodeLog, env: SyncEnv) -> ReplayCheck:
    """Every call of ``log`` made on ``env``, each answer checked (``ReplayMismatch`` at the
    first that differs); the finished check."""
    check = ReplayCheck(log)
    while (call := check.next_call()) is not None:
        check.check(env.reset(**call.arguments) if call.step is None else env.step(call.action))
    return check
