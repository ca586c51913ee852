"""Environment logic shared by both stacks, as plain classes (dict in, dict out).

Our server takes these classes directly (duck-typed environments); the OpenEnv side wraps
the very same logic in openenv-core ``Environment`` subclasses
(``bench.stacks.openenv_core_envs``), so both servers run identical environment code.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, ClassVar

#: Size of the padding string carried by every observation of ``BigObservationEnv``.
BIG_OBSERVATION_BYTES = 10 * 1024 * 1024
_BIG_PAD = "x" * BIG_OBSERVATION_BYTES

#: How long one step of ``SleepyEnv`` blocks its thread (OpenEnv's scaling experiment).
SLEEP_STEP_S = 1.0

#: The environment variable naming a directory where every env, when closed, appends one
#: line ``EPISODE_ID RESETS STEPS`` to a file of its process (``STEP_LEDGER_FILE``): the
#: steps each session got, counted on the env side (``bench.scale``). Unset: nothing written.
STEP_LEDGER_ENV = "BENCH_STEP_LEDGER"
STEP_LEDGER_FILE = "steps-{pid}.txt"
_LEDGER_DIR = os.environ.get(STEP_LEDGER_ENV)


def _record_steps(episode_id: str | None, resets: int, steps: int) -> None:
    if _LEDGER_DIR is None:
        return
    line = f"{episode_id} {resets} {steps}\n".encode()
    path = os.path.join(_LEDGER_DIR, STEP_LEDGER_FILE.format(pid=os.getpid()))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of one short line: lines of concurrent closes never interleave
    finally:
        os.close(fd)


class EchoEnv:
    """Echoes the action's message back; a sync env (servers hop to a thread by default)."""

    NON_BLOCKING: ClassVar[bool] = False
    metadata: ClassVar[dict[str, Any]] = {"name": "EchoEnv", "version": "1.0.0"}
    pad: ClassVar[str] = ""

    def __init__(self) -> None:
        self._episode_id: str | None = None
        self._step_count = 0
        self._resets = 0
        self._steps_total = 0  # every step of the env's life, for the step ledger

    def _observation(self, message: str) -> dict[str, Any]:
        return {
            "echoed": message,
            "length": len(message),
            "pad": self.pad,
            "reward": float(len(message)),
            "done": False,
        }

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        self._episode_id = episode_id or str(uuid.uuid4())
        self._step_count = 0
        self._resets += 1
        return self._observation("")

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self._step_count += 1
        self._steps_total += 1
        return self._observation(str(action.get("message", "")))

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "step_count": self._step_count}

    def close(self) -> None:
        _record_steps(self._episode_id, self._resets, self._steps_total)
        self._episode_id = None


class NonBlockingEchoEnv(EchoEnv):
    """The same echo, declared non-blocking: our server runs it inline on its event loop."""

    NON_BLOCKING: ClassVar[bool] = True


class AsyncEchoEnv(EchoEnv):
    """The same echo with ``async def`` methods (both servers await it on their loop)."""

    async def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> dict[str, Any]:  # type: ignore[override]
        return EchoEnv.reset(self, seed=seed, episode_id=episode_id, **kw)

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        return EchoEnv.step(self, action)


class SleepyEnv(EchoEnv):
    """A sync env whose step blocks for ``SLEEP_STEP_S`` (stands for a blocking call)."""

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(SLEEP_STEP_S)
        return EchoEnv.step(self, action)


class BigObservationEnv(EchoEnv):
    """A sync echo whose every observation carries a 10 MB string."""

    pad: ClassVar[str] = _BIG_PAD


class TallyEnv:
    """Counts its steps; its state is a snapshot of a few bytes (``restore`` brings it back),
    so a server with a session store keeps its episodes (``bench.handover``)."""

    NON_BLOCKING: ClassVar[bool] = True

    def __init__(self) -> None:
        self.count = 0

    def reset(self, **_: Any) -> dict[str, Any]:
        self.count = 0
        return {"count": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.count += 1
        return {"count": self.count, "reward": 1.0, "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.count}

    def snapshot(self) -> dict[str, Any]:
        return {"count": self.count}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.count = int(snapshot["count"])


#: env kind (as named on the command line of ``bench.serve``) -> plain class
ENV_KINDS: dict[str, type[EchoEnv]] = {
    "echo": EchoEnv,
    "echo_inline": NonBlockingEchoEnv,
    "echo_async": AsyncEchoEnv,
    "sleep": SleepyEnv,
    "big": BigObservationEnv,
}

__all__ = [
    "AsyncEchoEnv",
    "BIG_OBSERVATION_BYTES",
    "BigObservationEnv",
    "ENV_KINDS",
    "EchoEnv",
    "NonBlockingEchoEnv",
    "SLEEP_STEP_S",
    "STEP_LEDGER_ENV",
    "STEP_LEDGER_FILE",
    "SleepyEnv",
    "TallyEnv",
]
