"""The demo's agents: each drives one session over several episodes and keeps a tally."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..client import CapacityReached, EnvClient, EnvClientError
from .policies import Policy

__all__ = ["AgentTally", "run_agent"]


@dataclass
class AgentTally:
    """What one agent did: episode returns, steps, errors, time spent."""

    agent: int
    returns: list[float] = field(default_factory=list)
    steps: int = 0
    errors: list[str] = field(default_factory=list)
    #: the server refused this agent's session for want of room (CAPACITY_REACHED)
    turned_away: bool = False
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None

    @property
    def episodes(self) -> int:
        return len(self.returns)

    @property
    def mean_return(self) -> float:
        return sum(self.returns) / len(self.returns) if self.returns else math.nan

    @property
    def best_return(self) -> float:
        return max(self.returns) if self.returns else math.nan

    @property
    def seconds(self) -> float:
        return (self.finished or time.perf_counter()) - self.started


async def run_agent(
    url: str,
    tally: AgentTally,
    policy: Policy,
    *,
    episodes: int,
    max_steps: int,
    seed: int,
    on_progress: Callable[[], None] = lambda: None,
    token: str | None = None,
) -> None:
    """Play ``episodes`` episodes on one session; errors are tallied, never raised."""
    try:
        async with EnvClient(url, token=token) as env:
            for episode in range(episodes):
                result = await env.reset(seed=seed + episode)
                total = 0.0
                for _ in range(max_steps):
                    if result.done:
                        break
                    result = await env.step(policy.act(result.observation))
                    total += _reward_value(result.reward)
                    tally.steps += 1
                tally.returns.append(total)
                on_progress()
    except EnvClientError as exc:
        tally.errors.append(f"{type(exc).__name__}: {exc}")
        tally.turned_away = isinstance(exc, CapacityReached)
        on_progress()
    finally:
        tally.finished = time.perf_counter()


def _reward_value(reward: float | bool | None) -> float:
    return float(reward) if reward is not None else 0.0
