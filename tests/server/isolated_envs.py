"""Environments for the process-isolation tests: each can crash its own process on request,
in the ways a native library or careless code does (``SRV-ISO-2``). Every observation
carries the pid of the process that made it, so a test can check that process's fate."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
import time
from typing import Any

import trio

from openenv_anyio.environment import Environment

#: the faults a step (or reset, with ``crash=NAME``) can commit, by name
FAULTS = ("segfault", "sigsegv", "os_exit", "sys_exit", "busy_loop", "gil_held", "raise")


def commit(fault: str) -> None:
    """Do what ``fault`` names to this process."""
    match fault:
        case "segfault":
            ctypes.string_at(0)  # reads address 0: SIGSEGV from native code
        case "sigsegv":
            os.kill(os.getpid(), signal.SIGSEGV)
        case "os_exit":
            os._exit(3)
        case "sys_exit":
            sys.exit(4)
        case "busy_loop":
            while True:
                pass
        case "gil_held":  # one C call that never lets the GIL go (backtracking without end)
            re.fullmatch(r"(a|aa)+b", "a" * 200)
        case "raise":
            raise ValueError("the action asked for an error")
        case _:
            raise AssertionError(f"unknown fault {fault!r}")


class Crashing(Environment):
    """A step counter; ``{"crash": NAME}`` commits a fault (``FAULTS``) instead of stepping,
    ``{"sleep": S}`` makes the step take S seconds."""

    action_schema = {
        "type": "object",
        "properties": {"crash": {"enum": list(FAULTS)}, "sleep": {"type": "number", "minimum": 0}},
        "additionalProperties": False,
    }
    metadata = {"name": "Crashing", "description": "crashes on request"}

    def __init__(self) -> None:
        self.steps = 0
        self.episode_id: str | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, crash: str | None = None) -> dict[str, Any]:
        if crash:
            commit(crash)
        self.steps = 0
        self.episode_id = episode_id or "episode"
        return {"steps": 0, "pid": os.getpid()}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        if action.get("crash"):
            commit(action["crash"])
        if action.get("sleep"):
            time.sleep(action["sleep"])
        self.steps += 1
        return {"steps": self.steps, "pid": os.getpid(), "reward": 1.0, "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps, "pid": os.getpid()}


class AsyncCrashing(Crashing):
    """The same, with ``async def`` methods (awaited on the process's own event loop)."""

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None, crash: str | None = None
    ) -> dict[str, Any]:  # type: ignore[override]
        await trio.sleep(0)
        return super().reset(seed, episode_id, crash)

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        await trio.sleep(0)
        return super().step(action)


class CrashingFactory(Environment):
    """Its constructor kills its process (a native library that crashes on load)."""

    def __init__(self) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: Any) -> dict[str, Any]:
        return {}


class RaisingFactory(Environment):
    """Its constructor raises (a missing model file, say)."""

    def __init__(self) -> None:
        raise FileNotFoundError("model weights not found")

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: Any) -> dict[str, Any]:
        return {}
