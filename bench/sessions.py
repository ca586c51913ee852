"""Client-side measurement loops, the same for every client stack (anyio: asyncio or trio).

A client stack supplies an *opener*: ``open_session(url)`` is an async context manager
yielding an object with ``await reset()`` and ``await step(action)``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Awaitable, Callable
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


#: The phases of a phased burst (``run_phased_burst``), in order.
PHASES = ("connect", "reset", "steps", "close")


class PhaseGate:
    """Holds the sessions of a burst between phases so that the server's CPU can be split by
    phase: when every session has passed a phase (or failed before it), ``between(phase)``
    runs once (in ``bench.scale``: a barrier across the load processes while the harness
    reads the server's counters), then every session goes on to the next phase."""

    def __init__(self, sessions: int, between: Callable[[str], Awaitable[None]], *, hold: bool = True) -> None:
        self._left = dict.fromkeys(PHASES, sessions)
        self._open = {phase: anyio.Event() for phase in PHASES}
        self._between = between
        self._hold = hold  # False: nobody waits; ``between`` still runs when the last one passes

    async def _arrive(self, phase: str) -> bool:
        """Count one arrival; the last one runs ``between`` and opens the phase."""
        self._left[phase] -= 1
        if self._left[phase] == 0:
            await self._between(phase)
            self._open[phase].set()
            return True
        return False

    async def passed(self, phase: str) -> None:
        """This session is done with ``phase``: wait until every session is."""
        if not await self._arrive(phase) and self._hold:
            await self._open[phase].wait()

    async def failed(self, arrived: int) -> None:
        """A session that had passed ``arrived`` phases failed: it arrives at every later one."""
        for phase in PHASES[arrived:]:
            await self._arrive(phase)


@dataclass
class SessionRecord:
    """One session of a phased burst. Times are seconds: ``connect_s`` from the common start
    to the open session, ``reset_s`` and each of ``step_s`` the request's own latency."""

    episode: str
    ok: bool = False
    connect_s: float | None = None
    reset_s: float | None = None
    step_s: list[float] = field(default_factory=list)
    close_s: float | None = None
    failed_in: str = ""  # the phase it failed in
    cause: str = ""  # the failure, classified (``failure_cause``)
    error: str = ""  # the exception as raised, shortened


def failure_cause(exc: BaseException, phase: str) -> str:
    """A short class of failure for counting: what refused or ended the session.

    Looks through the exception's causes for the OS error or the close code underneath
    (our client's errors and websockets' ``ConnectionClosed`` both carry one)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for error in seen:
        code = getattr(error, "code", None)
        received = getattr(error, "rcvd", None)  # websockets: the close frame the server sent
        if received is not None and getattr(received, "code", None) is not None:
            return f"closed by server with code {received.code}"
        if "Closed" in type(error).__name__ and isinstance(code, int):
            return f"closed by server with code {code}"
    for error in seen:
        if isinstance(error, ConnectionRefusedError) or type(error).__name__ == "ConnectionRefused":
            return "connect refused"
        if isinstance(error, ConnectionResetError):
            return "connection reset"
        if isinstance(error, BrokenPipeError):
            return "broken pipe"
        if isinstance(error, OSError) and error.errno is not None:
            return f"OSError errno {error.errno} ({os.strerror(error.errno)})"
    for error in seen:
        if isinstance(error, TimeoutError):
            return "handshake timeout" if phase == "connect" else "request timeout"
    if "Closed" in type(exc).__name__ or "Lost" in type(exc).__name__:
        return "closed by server without a code"
    return type(exc).__name__


async def run_phased_burst(
    open_session: Opener,
    url: str,
    episodes: list[str],
    steps: int,
    *,
    start_at: float,
    cap_s: float,
    between: Callable[[str], Awaitable[None]],
    hold: bool = True,
) -> list[SessionRecord]:
    """One session per episode id, all starting at wall-clock ``start_at``: connect, reset
    (with that ``episode_id``, which the env side's step ledger names), ``steps`` steps,
    close; ``PhaseGate`` holds them between the phases (with ``hold``; without, each session
    runs straight through and ``between`` only marks when the last one passed). A session not done within ``cap_s``
    of the start fails with the cause ``cap reached``."""
    gate = PhaseGate(len(episodes), between, hold=hold)
    records = [SessionRecord(episode) for episode in episodes]

    async def one_session(record: SessionRecord) -> None:
        arrived = 0  # phases this session has passed (arrived at their gate)

        async def passed() -> None:
            nonlocal arrived
            arrived += 1
            await gate.passed(PHASES[arrived - 1])

        try:
            with anyio.fail_after(cap_s - (time.time() - start_at)) as scope:
                try:
                    session_cm = open_session(url)
                    session = await session_cm.__aenter__()
                    record.connect_s = time.time() - start_at
                    try:
                        await passed()
                        started = time.perf_counter()
                        await session.reset(seed=1, episode_id=record.episode)
                        record.reset_s = time.perf_counter() - started
                        await passed()
                        for _ in range(steps):
                            started = time.perf_counter()
                            await session.step(ACTION)
                            record.step_s.append(time.perf_counter() - started)
                        await passed()
                    except BaseException as exc:
                        await session_cm.__aexit__(type(exc), exc, exc.__traceback__)
                        raise
                    started = time.perf_counter()
                    await session_cm.__aexit__(None, None, None)
                    record.close_s = time.perf_counter() - started
                except Exception as exc:
                    if isinstance(exc, TimeoutError) and scope.cancel_called:
                        raise
                    raise _Failed(exc) from exc
            record.ok = True
            await passed()
        except TimeoutError as exc:  # the cap
            _fail(record, PHASES[arrived], exc, "cap reached")
            await gate.failed(arrived)
        except _Failed as failed:
            _fail(record, PHASES[arrived], failed.error, failure_cause(failed.error, PHASES[arrived]))
            await gate.failed(arrived)

    await anyio.sleep(max(0.0, start_at - time.time()))
    async with anyio.create_task_group() as tg:
        for record in records:
            tg.start_soon(one_session, record)
    return records


class _Failed(Exception):
    """A session's own failure, carried past the cap's ``TimeoutError`` handler."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _fail(record: SessionRecord, phase: str, exc: BaseException, cause: str) -> None:
    record.failed_in, record.cause = phase, f"{phase}: {cause}"
    record.error = f"{type(exc).__name__}: {exc}"[:200]
