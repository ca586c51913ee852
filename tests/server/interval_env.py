"""An env that reports the thread switch interval and the gc thresholds its server process runs with."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any, ClassVar


class SwitchIntervalEnv:
    NON_BLOCKING: ClassVar[bool] = True

    def reset(self, **_: Any) -> dict[str, Any]:
        return {"switch_interval": sys.getswitchinterval(), "gc_threshold": gc.get_threshold(), "pid": os.getpid()}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return self.reset()

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}
