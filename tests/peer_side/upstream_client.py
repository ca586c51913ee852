"""Upstream's own client (``GenericEnvClient`` of the installed openenv release) driving a
server: run by a peer venv's Python (``tests/upstream_peers.run_peer_script``).

    python upstream_client.py URL ACTION_JSON [INVALID_ACTION_JSON]

Plays reset(seed=1), two steps with ACTION, state, reset(episode_id="ep-7"), state, and, when
INVALID_ACTION is given, a step with it (expected to be refused) followed by a valid step.
Prints one JSON line: {"version": ..., "transcript": [{"call": ..., "result"|"error": ...}]}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import metadata
from typing import Any


def _result(result: Any) -> dict[str, Any]:
    return {"observation": result.observation, "reward": result.reward, "done": result.done}


async def play(url: str, action: dict[str, Any], invalid: dict[str, Any] | None) -> list[dict[str, Any]]:
    from openenv.core.generic_client import GenericEnvClient

    transcript: list[dict[str, Any]] = []
    async with GenericEnvClient(base_url=url) as env:
        transcript.append({"call": "reset", "result": _result(await env.reset(seed=1))})
        for _ in range(2):
            transcript.append({"call": "step", "result": _result(await env.step(action))})
        transcript.append({"call": "state", "result": await env.state()})
        transcript.append({"call": "reset", "result": _result(await env.reset(episode_id="ep-7"))})
        transcript.append({"call": "state", "result": await env.state()})
        if invalid is not None:
            try:
                refused = await env.step(invalid)
            except Exception as exc:  # upstream raises RuntimeError("Server error: ... (code: ...)")
                transcript.append({"call": "step-invalid", "error": f"{type(exc).__name__}: {exc}"})
            else:
                transcript.append({"call": "step-invalid", "result": _result(refused)})
            transcript.append({"call": "step", "result": _result(await env.step(action))})
    return transcript


def main() -> None:
    url, action = sys.argv[1], json.loads(sys.argv[2])
    invalid = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    transcript = asyncio.run(asyncio.wait_for(play(url, action, invalid), 300))
    version = next((metadata.version(name) for name in ("openenv", "openenv-core") if _installed(name)), "unknown")
    print(json.dumps({"version": version, "transcript": transcript}))


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    main()
