"""Client-side measurement loops, the same for every client stack (anyio: asyncio or trio).

A client stack supplies an *opener*: ``open_session(url)`` is an async context manager
yielding an object with ``await reset()`` and ``await step(action)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

ACTION: dict[str, Any] = {"message": "hello"}


class Session(Protocol):
    async def reset(self, **kwargs: Any) -> Any: ...
    async def step(self, action: dict[str, Any]) -> Any: ...


Opener = Callable[[str], AbstractAsyncContextManager[Session]]


@dataclass
class RunResult:
    """One run: every step latency (seconds) and the wall time of the stepping phase."""

    sessions: int
    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.latencies)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000.0


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


async def run_sessions(
    open_session: Opener,
    url: str,
    sessions: int,
    steps: int,
    *,
    duration_s: float | None = None,
    timeout_s: float = 120.0,
    action: dict[str, Any] | None = None,
) -> RunResult:
    """Open ``sessions`` sessions, reset each, then step them all at once.

    Each session steps ``steps`` times or until ``duration_s`` has passed since the common
    start, whichever comes first. Only the stepping phase is timed.
    """
    action = ACTION if action is None else action
    result = RunResult(sessions)
    all_ready = anyio.Event()
    go = anyio.Event()
    ready = 0
    deadline = math.inf

    def count_ready() -> None:
        nonlocal ready
        ready += 1
        if ready == sessions:
            all_ready.set()

    async def one_session() -> None:
        counted = False
        try:
            async with open_session(url) as session:
                await session.reset(seed=1)
                counted = True
                count_ready()
                await go.wait()
                latencies = result.latencies
                for _ in range(steps):
                    started = time.perf_counter()
                    if started >= deadline:
                        break
                    await session.step(action)
                    latencies.append(time.perf_counter() - started)
        except Exception as exc:  # recorded, reported as a failed run
            result.errors.append(f"{type(exc).__name__}: {exc}")
            if not counted:
                count_ready()

    with anyio.fail_after(timeout_s):
        async with anyio.create_task_group() as tg:
            for _ in range(sessions):
                tg.start_soon(one_session)
            await all_ready.wait()
            start = time.perf_counter()
            if duration_s is not None:
                deadline = start + duration_s
            go.set()
        result.wall_s = time.perf_counter() - start
    return result


@dataclass
class SessionOutcome:
    """One session of a burst: did connect + reset + steps succeed, and how long it took."""

    ok: bool
    seconds: float
    error: str = ""


async def run_burst(
    open_session: Opener,
    url: str,
    sessions: int,
    steps: int,
    *,
    start_at: float,
    cap_s: float,
) -> list[SessionOutcome]:
    """All sessions start at wall-clock ``start_at``: connect, reset, ``steps`` steps, close.

    A session not done within ``cap_s`` of the start counts as failed.
    """
    outcomes: list[SessionOutcome] = []

    async def one_session() -> None:
        try:
            with anyio.fail_after(cap_s - (time.time() - start_at)):
                async with open_session(url) as session:
                    await session.reset(seed=1)
                    for _ in range(steps):
                        await session.step(ACTION)
            outcomes.append(SessionOutcome(True, time.time() - start_at))
        except Exception as exc:
            outcomes.append(SessionOutcome(False, time.time() - start_at, f"{type(exc).__name__}: {exc}"[:200]))

    await anyio.sleep(max(0.0, start_at - time.time()))
    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(one_session)
    return outcomes


async def hold_sessions(
    open_session: Opener,
    url: str,
    sessions: int,
    measure: Callable[[], Any],
    *,
    settle_s: float = 1.0,
    connect_concurrency: int = 64,
    timeout_s: float = 120.0,
) -> tuple[Any, int]:
    """Open and reset ``sessions`` sessions, keep them idle, call ``measure()``, close all.

    Connections are opened at most ``connect_concurrency`` at a time. Returns what
    ``measure`` returned and how many sessions were open when it ran.
    """
    opened = 0
    all_open = anyio.Event()
    done = anyio.Event()
    limiter = anyio.CapacityLimiter(connect_concurrency)

    def count() -> None:
        nonlocal opened
        opened += 1

    async def one_session(index: int) -> None:
        try:
            async with AsyncExitStack() as stack:
                async with limiter:
                    session = await stack.enter_async_context(open_session(url))
                    await session.reset(seed=index)
                count()
                if opened == sessions:
                    all_open.set()
                await done.wait()
        except Exception:
            pass  # a session that failed to open is simply not counted

    with anyio.fail_after(timeout_s):
        async with anyio.create_task_group() as tg:
            for index in range(sessions):
                tg.start_soon(one_session, index)
            with anyio.move_on_after(timeout_s / 2):
                await all_open.wait()
            await anyio.sleep(settle_s)
            value = measure()
            held = opened
            done.set()
    return value, held
