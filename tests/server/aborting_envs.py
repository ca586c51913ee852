"""Environments whose code raises ``BaseException``s (``SystemExit``, ``KeyboardInterrupt``, ...)
at a point a test chooses: the fault-isolation tests check they end only their own session."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import trio

from openenv_anyio.environment import Environment

#: what env code may raise that is not an ``Exception``
ABORTS: dict[str, type[BaseException]] = {
    "SystemExit": SystemExit,
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
}


class _AbortingObservation:
    """An observation whose own ``model_dump`` raises: env code that the server runs on the
    event loop's thread when it reads the observation."""

    def __init__(self, abort: type[BaseException]) -> None:
        self.abort = abort

    def model_dump(self) -> dict[str, Any]:
        raise self.abort()


class Aborting(Environment):
    """Raises ``ABORTS[name]`` in the method the client names: ``reset`` takes
    ``abort_in_reset=NAME``, ``step`` takes ``{"abort": NAME}`` (or returns an observation
    whose ``model_dump`` raises it with ``{"abort_in_observation": NAME}``), ``close`` aborts
    when the last step asked ``{"abort_on_close": NAME}``."""

    closes: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.steps = 0
        self.abort_on_close: str | None = None

    def reset(self, abort_in_reset: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if abort_in_reset:
            raise ABORTS[abort_in_reset]()
        self.steps = 0
        return {"steps": 0}

    def step(self, action: dict[str, Any]) -> Any:
        if action.get("abort"):
            raise ABORTS[action["abort"]]()
        if action.get("abort_in_observation"):
            return _AbortingObservation(ABORTS[action["abort_in_observation"]])
        self.abort_on_close = action.get("abort_on_close")
        self.steps += 1
        return {"steps": self.steps, "reward": 1.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.steps}

    def close(self) -> None:
        with Aborting.lock:
            Aborting.closes += 1
        if self.abort_on_close:
            raise ABORTS[self.abort_on_close]()


class InlineAborting(Aborting):
    NON_BLOCKING: ClassVar[bool] = True


class AsyncAborting(Aborting):
    """The same behaviour from ``async def`` methods."""

    async def reset(self, abort_in_reset: str | None = None, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        await trio.sleep(0)
        return Aborting.reset(self, abort_in_reset, **kwargs)

    async def step(self, action: dict[str, Any]) -> Any:
        await trio.sleep(0)
        return Aborting.step(self, action)

    async def close(self) -> None:  # type: ignore[override]
        await trio.sleep(0)
        Aborting.close(self)


def exiting_factory() -> Any:
    """A factory that calls ``sys.exit()``."""
    raise SystemExit(3)


class Unprintable(Exception):
    """An exception whose ``__str__`` itself raises."""

    def __str__(self) -> str:
        raise RuntimeError("no words for this")


#: exceptions whose text cannot go into a frame as it is
AWKWARD: dict[str, BaseException] = {
    "lone surrogate": ValueError("bad \ud800 text"),
    "raising __str__": Unprintable(),
}


class Awkward(Environment):
    """``step`` raises ``AWKWARD[action["raise"]]``; ``state`` raises the lone-surrogate one."""

    NON_BLOCKING: ClassVar[bool] = True

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        raise AWKWARD[action["raise"]]

    @property
    def state(self) -> dict[str, Any]:
        raise AWKWARD["lone surrogate"]


class HangingClose(Environment):
    """``close()`` blocks until :attr:`release` is set (a stuck native resource)."""

    release: ClassVar[threading.Event] = threading.Event()

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"reward": 0.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}

    def close(self) -> None:
        HangingClose.release.wait()


class AsyncHangingClose(HangingClose):
    async def close(self) -> None:  # type: ignore[override]
        await trio.sleep_forever()


class DeepObservation(Environment):
    """``{"depth": N}`` makes the observation a list nested N deep (orjson writes at most
    255 levels: the step's answer fits, a dashboard frame wrapping it does not)."""

    NON_BLOCKING: ClassVar[bool] = True

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {"deep": []}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        value: list[Any] = []
        for _ in range(int(action.get("depth", 1)) - 1):
            value = [value]
        return {"deep": value, "reward": 0.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": "deep", "step_count": 0}
