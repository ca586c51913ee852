"""An env that reports the thread switch interval and the gc thresholds its server process
runs with, and a reader of what every worker of a server reports."""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any, ClassVar

from websockets.sync.client import connect


class SwitchIntervalEnv:
    NON_BLOCKING: ClassVar[bool] = True

    def reset(self, **_: Any) -> dict[str, Any]:
        return {"switch_interval": sys.getswitchinterval(), "gc_threshold": gc.get_threshold(), "pid": os.getpid()}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return self.reset()

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


def every_workers_report(url: str, pids: list[int], timeout_s: float = 20.0) -> dict[int, dict[str, Any]]:
    """Each worker's reset observation, by process id, from new sessions until every one of
    ``pids`` has answered (at most 40 sessions)."""
    seen: dict[int, dict[str, Any]] = {}
    for _ in range(40):  # sessions spread over the workers
        with connect("ws" + url.removeprefix("http") + "/ws", open_timeout=timeout_s) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            observation = json.loads(ws.recv(timeout=timeout_s))["data"]["observation"]
            seen[observation["pid"]] = observation
        if len(seen) == len(pids):
            break
    return seen
