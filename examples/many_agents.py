"""Run N agent sessions concurrently in one task group and collect their returns.

    python examples/many_agents.py http://127.0.0.1:8000 --agents 16 --steps 20 --backend trio

Each agent owns one ``EnvClient`` (one session) inside the same task group: if one fails,
the others are cancelled and the error propagates; when all finish, every connection is
closed. Works on asyncio and trio alike (``anyio.run(..., backend=...)``). The action is
``{"message": ...}`` (the echo environment's); adapt ``choose_action`` to your env.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio

from openenv_anyio import EnvClient, EnvClientError


def choose_action(agent: int, step: int, observation: dict[str, Any]) -> dict[str, Any]:
    """A stand-in policy: say something a little different each step."""
    return {"message": f"agent {agent} step {step}"}


async def run_agent(url: str, agent: int, steps: int, returns: dict[int, float]) -> None:
    """One episode of at most ``steps`` steps; its return goes into ``returns[agent]``."""
    async with EnvClient(url) as env:
        result = await env.reset(seed=agent)
        total = 0.0
        for step in range(steps):
            result = await env.step(choose_action(agent, step, result.observation))
            total += float(result.reward or 0.0)
            if result.done:
                break
        returns[agent] = total


async def run_all(url: str, agents: int, steps: int) -> dict[int, float]:
    returns: dict[int, float] = {}
    async with anyio.create_task_group() as task_group:
        for agent in range(agents):
            task_group.start_soon(run_agent, url, agent, steps, returns)
    return dict(sorted(returns.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    try:
        returns = anyio.run(run_all, args.url, args.agents, args.steps, backend=args.backend)
    except ExceptionGroup as group:
        failures, rest = group.split((EnvClientError, ValueError))
        if rest is not None or failures is None:
            raise
        print(f"error: {failures.exceptions[0]}", file=sys.stderr)
        return 1
    for agent, total in returns.items():
        print(f"agent {agent}: return {total:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
