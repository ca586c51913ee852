"""An environment whose step waits until the test opens a gate (a file appears): a request
that is provably still executing when the test acts, without timing guesses."""

from __future__ import annotations

import os
import time
from typing import Any

from openenv_anyio.environment import Environment

#: the longest a step waits for its gate (a test that forgets to open it still ends)
GATE_LIMIT_S = 60.0


class GatedEnv(Environment):
    def __init__(self) -> None:
        self.steps = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.steps = 0
        return {"steps": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        gate = action.get("gate")
        if gate:
            open(action["started"], "w").close()
            deadline = time.monotonic() + GATE_LIMIT_S
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.01)
        self.steps += 1
        return {"steps": self.steps, "reward": 1.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.steps}
