"""Where an environment's sync calls run: inline on the event loop, or on one worker thread.

Every session owns one runner. :class:`ThreadRunner` gives the session a dedicated OS
thread fed by a queue, so every call of that session runs on the same thread (thread
affinity, ``SRV-EXEC-1``: libraries such as Playwright require it) and no thread is spawned
per call. Within a :func:`thread_starter` block the thread is started by the block's starter
thread while the session's first calls already wait in its queue: the loop never waits for
a thread to start. Finished calls go back to the loop through one :class:`CompletionInbox` per trio
run: the first completion after a drain wakes the loop (``TrioToken.run_sync_soon``), later
ones join the same wake-up, so sessions finishing together cost one wake-up, not one each.
:class:`InlineRunner` calls directly, for environments that declare ``NON_BLOCKING``.

Coroutine results are awaited on the event loop in both cases (async environments).
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import itertools
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import outcome
import trio

from .faults import await_env_code, call_env_code, env_outcome

__all__ = ["CompletionInbox", "EnvRunner", "InlineRunner", "ThreadNotStarted", "ThreadRunner", "thread_starter"]

_thread_numbers = itertools.count(1)


class EnvRunner(Protocol):
    """Runs zero-argument sync callables for one session."""

    async def run(self, fn: Callable[[], Any]) -> Any:
        """Call ``fn`` where this runner runs calls; await the result if it is awaitable."""
        ...

    async def aclose(self, final: Callable[[], Any] | None = None) -> None:
        """Stop the runner; ``final``, if given, is its last call (its error is raised
        here). It runs nothing afterwards."""
        ...


class InlineRunner:
    """Runs calls directly on the event loop (no thread hop).

    The calls run with trio's KeyboardInterrupt protection: a Ctrl-C that arrives while env
    code holds the loop's thread is delivered to the main task at its next checkpoint, as the
    process's, and never raised inside the env's code, where it would read as the env raising
    ``KeyboardInterrupt`` (SRV-FAULT-1: that session's end, and the process going on).
    """

    __slots__ = ()

    @trio.lowlevel.enable_ki_protection
    async def run(self, fn: Callable[[], Any]) -> Any:
        result = call_env_code(fn)
        if type(result) is not dict and inspect.isawaitable(result):  # a dict (the usual answer) never is
            result = await await_env_code(result)
        return result

    async def aclose(self, final: Callable[[], Any] | None = None) -> None:
        if final is not None:
            await self.run(final)


class ThreadNotStarted(RuntimeError):
    """A session's thread could not be started (the process is out of threads or memory):
    the calls queued for it never ran."""


class _Pending:
    """One submitted call: the task waiting for it, unless it stopped waiting."""

    __slots__ = ("task", "abandoned")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.abandoned = False


_STOP: Callable[[], Any] = lambda: None  # noqa: E731 - the last job when there is no final call


class CompletionInbox:
    """Hands finished calls from worker threads back to the trio loop, batching wake-ups.

    Each wake-up of the loop from another thread is a syscall and a GIL hand-off; with many
    sessions finishing at once, one wake-up drains every completion posted before it runs.
    """

    __slots__ = ("_token", "_items", "_armed")

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._token = token
        self._items: collections.deque[tuple[_Pending, outcome.Outcome[Any]]] = collections.deque()
        self._armed = False  # a drain is scheduled and has not started yet

    @classmethod
    def current(cls) -> CompletionInbox:
        """The inbox of the running trio loop (made on first use)."""
        try:
            return _inbox.get()
        except LookupError:
            inbox = cls(trio.lowlevel.current_trio_token())
            _inbox.set(inbox)
            return inbox

    def post(self, pending: _Pending, result: outcome.Outcome[Any]) -> None:
        """From a worker thread: deliver ``result`` to ``pending``'s task (raises
        ``trio.RunFinishedError`` once the loop is gone)."""
        self._items.append((pending, result))
        if not self._armed:
            self._armed = True
            try:
                self._token.run_sync_soon(self._drain)
            except BaseException:
                self._armed = False
                raise

    def _drain(self) -> None:
        # Disarm first: an item appended after the last pop below then sees the inbox
        # disarmed and schedules a new drain, so nothing is left behind.
        self._armed = False
        items = self._items
        while items:
            pending, result = items.popleft()
            if not pending.abandoned:
                trio.lowlevel.reschedule(pending.task, result)


_inbox: trio.lowlevel.RunVar[CompletionInbox] = trio.lowlevel.RunVar("openenv_anyio_completion_inbox")
_starter: trio.lowlevel.RunVar[ThreadRunner | None] = trio.lowlevel.RunVar("openenv_anyio_thread_starter", None)


class ThreadRunner:
    """A dedicated worker thread for one session's sync calls.

    If the waiting task is cancelled while a call runs, the runner stops waiting for that
    call (the thread finishes it in the background); later calls queue behind it.
    :meth:`aclose` lets the thread run out: once it returns, the thread has run its last
    call and is ending (a daemon; it is not joined, see there). If a call was abandoned, the
    thread ends by itself once the environment returns.
    """

    def __init__(self, name: str | None = None, *, start: bool = True) -> None:
        self._inbox = CompletionInbox.current()
        # A job without a _Pending is the starter's own (a thread to start): nobody waits for it.
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], _Pending | None, bool]] = queue.SimpleQueue()
        self._abandoned = False
        self._closed = False
        self._starting = False  # handed to a starter thread, which has not started it yet
        self._not_started: ThreadNotStarted | None = None
        self._thread = threading.Thread(
            target=self._work, name=name or f"openenv-env-{next(_thread_numbers)}", daemon=True
        )
        if start:
            self._thread.start()

    @classmethod
    async def open(cls, name: str | None = None) -> ThreadRunner:
        """A runner whose thread is started without blocking the event loop.

        ``Thread.start()`` waits until the new thread runs; with thousands of busy threads
        that wait stalls the loop for every other connection (handshakes included), so it
        happens elsewhere. Within a :func:`thread_starter` block the block's starter thread
        starts it and nobody waits: calls made meanwhile queue up for the thread, and if it
        cannot be started they raise :class:`ThreadNotStarted`. Outside one, it is started
        on one of trio's cached worker threads before this returns.
        """
        runner = cls(name, start=False)
        starter = _starter.get(None)
        if starter is None or starter._closed:  # no block, or one that ended out of order
            # Shielded: a thread that started always reaches its runner, which the caller closes.
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(runner._thread.start)
        else:
            runner._starting = True
            starter._jobs.put((runner._start, None, False))
        return runner

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def alive(self) -> bool:
        """Whether the runner's thread runs or is still to be started by a starter thread."""
        return self._starting or self._thread.is_alive()

    def _start(self) -> None:
        """On a starter thread: start this runner's thread; if that fails, fail the calls
        queued for it (a call queued later sees ``_not_started`` itself, see :meth:`_submit`)."""
        try:
            self._thread.start()
        except Exception as exc:
            not_started = ThreadNotStarted(f"the session's thread could not be started: {exc}")
            not_started.__cause__ = exc
            self._not_started = not_started  # set before the drain below (see _submit)
            failure: outcome.Outcome[Any] = outcome.Error(not_started)
            with contextlib.suppress(queue.Empty, trio.RunFinishedError):
                while True:
                    _, pending, _ = self._jobs.get_nowait()
                    if pending is not None:
                        self._inbox.post(pending, failure)
        finally:
            self._starting = False

    def _work(self) -> None:
        jobs, post = self._jobs, self._inbox.post
        while True:
            fn, pending, last = jobs.get()
            if pending is None:
                fn()  # a starter's job: it handles its own failure
                continue
            try:
                post(pending, env_outcome(fn))
            except trio.RunFinishedError:
                return
            if last:
                return

    async def _submit(self, fn: Callable[[], Any], *, last: bool = False) -> Any:
        pending = _Pending(trio.lowlevel.current_task())
        self._jobs.put((fn, pending, last))
        if self._not_started is not None:
            # The starter may have failed this job already or not: the completion, if any,
            # finds it abandoned (completions are delivered on this thread, see _drain).
            pending.abandoned = True
            raise self._not_started

        def abort(_: Any) -> trio.lowlevel.Abort:
            pending.abandoned = True
            self._abandoned = True
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    async def run(self, fn: Callable[[], Any]) -> Any:
        if self._closed:
            raise RuntimeError("the environment runner is closed")
        result = await self._submit(fn)
        if inspect.isawaitable(result):
            result = await await_env_code(result)
        return result

    async def aclose(self, final: Callable[[], Any] | None = None) -> None:
        """Stop the thread; ``final``, if given, is its last call, in the same hand-off
        (its error is raised here; a coroutine it returns is awaited on the loop). Once
        closed, closing again does nothing.

        Cancellable: a caller's time bound on a ``final`` that hangs holds (``SRV-FAULT-3``).
        The final call stays queued as the thread's last, so the thread still ends after
        it, whenever that is; :attr:`thread` tells whether it has.
        """
        if self._closed:
            return
        self._closed = True
        if self._not_started is not None:  # nothing ever ran: nothing to stop or close
            return
        if self._abandoned:  # a call still runs: let the thread stop after it, unwaited
            orphan = _Pending(trio.lowlevel.current_task())
            orphan.abandoned = True
            self._jobs.put((final or _STOP, orphan, True))
            return
        try:
            result = await self._submit(final or _STOP, last=True)
        except ThreadNotStarted:
            return
        if final is not None and inspect.isawaitable(result):
            await await_env_code(result)
        # The thread returns right after delivering _STOP. It is not joined here: joining
        # blocks the loop until that thread gets the GIL once more, which with thousands of
        # busy threads stalls every other connection (for seconds, in bench scenario 9).


@contextlib.asynccontextmanager
async def thread_starter() -> AsyncIterator[None]:
    """Within the block, :meth:`ThreadRunner.open` starts session threads from one
    dedicated thread, owned by the block and stopped when it ends.

    A session opening costs one hand-off to that thread instead of a trip through trio's
    thread cache (bench/README.md, "Server CPU per connection").
    """
    starter = ThreadRunner("openenv-thread-starter")
    token = _starter.set(starter)
    try:
        yield
    finally:
        _starter.reset(token)
        with trio.CancelScope(shield=True):
            await starter.aclose()
