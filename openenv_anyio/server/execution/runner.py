"""Where an environment's sync calls run: inline on the event loop, or on one worker thread.

Every session owns one runner. :class:`ThreadRunner` gives the session an OS thread of its
own, fed by a queue, so every call of that session runs on the same thread (thread
affinity, ``SRV-EXEC-1``: libraries such as Playwright require it) and no thread is spawned
per call. Within a :func:`thread_starter` block a new thread is started by the block's
starter thread while the session's first calls already wait in its queue (the loop never
waits for a thread to start), and a thread whose session has closed waits for the next
session to open, the block's ``idle_s`` at most, before it ends (:class:`IdleThreads`):
sessions that come and go reuse threads instead of starting one each. A thread serves one
session at a time, from its first call to its last. Finished calls go back to the loop
through one :class:`CompletionInbox` per trio run: the first completion after a drain wakes
the loop (``TrioToken.run_sync_soon``), later ones join the same wake-up, so sessions
finishing together cost one wake-up, not one each.
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

__all__ = [
    "IDLE_THREAD_S",
    "CompletionInbox",
    "EnvRunner",
    "IdleThreads",
    "InlineRunner",
    "ThreadNotStarted",
    "ThreadRunner",
    "thread_starter",
]

_thread_numbers = itertools.count(1)

#: how long a session's thread waits for the next session before it ends, by default (as
#: trio's own thread cache; ``ServerConfig.session_thread_idle_s``)
IDLE_THREAD_S = 10.0


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

# A job: the call; who waits for it (None: the starter's own job, nobody waits); the runner
# whose last call it is (None for every other call).
_Job = tuple[Callable[[], Any], "_Pending | None", "ThreadRunner | None"]
_Jobs = queue.SimpleQueue[_Job]

_END: Callable[[], Any] = lambda: None  # noqa: E731 - tells a thread waiting for a session to end


class IdleThreads:
    """Session threads whose session has closed, each waiting on its own queue for the next
    session's first call; the newest is handed out first, so the ones left over are the ones
    that end.

    The loop (handing a thread a session) and a thread (ending after :attr:`idle_s` without
    one) each claim a waiting thread by removing it from one dict, an atomic step under the
    interpreter lock: whoever removes it first has it.
    """

    __slots__ = ("idle_s", "_waiting", "_closed")

    def __init__(self, idle_s: float = IDLE_THREAD_S) -> None:
        self.idle_s = idle_s
        self._waiting: dict[_Jobs, threading.Thread] = {}
        self._closed = False

    def take(self) -> tuple[_Jobs, threading.Thread] | None:
        """A waiting thread's queue and thread, newest first; ``None`` when none waits."""
        try:
            return self._waiting.popitem()
        except KeyError:
            return None

    def wait_here(self, jobs: _Jobs, thread: threading.Thread) -> bool:
        """From a thread whose session has closed: whether to wait for the next session
        (``False`` once these threads are closed, or when none may wait: the thread ends)."""
        if self.idle_s <= 0:
            return False
        self._waiting[jobs] = thread
        if self._closed:  # unless close() took it already and an _END is on its way
            return self._waiting.pop(jobs, None) is None
        return True

    def leave(self, jobs: _Jobs) -> bool:
        """From a thread that waited :attr:`idle_s`: whether it left (``False``: a session
        took it meanwhile, and that session's first call is on its way)."""
        return self._waiting.pop(jobs, None) is not None

    def close(self) -> None:
        """End every waiting thread; a thread whose session closes later ends then."""
        self._closed = True
        while (waiting := self.take()) is not None:
            waiting[0].put((_END, None, None))


def _serve(jobs: _Jobs, inbox: CompletionInbox, idle: IdleThreads | None) -> None:
    """A session thread: runs each job and posts its outcome; after a session's last call it
    waits in ``idle`` for the next session (without ``idle``, or once it is closed, it ends)."""
    post, thread = inbox.post, threading.current_thread()
    idle_s: float | None = None  # set while waiting for the next session
    while True:
        try:
            fn, pending, ending = jobs.get() if idle_s is None else jobs.get(timeout=idle_s)
        except queue.Empty:  # waited idle_s for a session
            if idle is None or idle.leave(jobs):
                return
            idle_s = None  # a session took it meanwhile: its first call is on its way
            continue
        idle_s = None
        if pending is None:
            if fn is _END:
                return
            fn()  # a starter's job: it handles its own failure
            continue
        result = env_outcome(fn)
        if ending is not None:
            ending._finished = True
            # Waiting before the answer goes: a session opened as this one closes finds it.
            idle_s = idle.idle_s if idle is not None and idle.wait_here(jobs, thread) else None
        try:
            post(pending, result)
        except trio.RunFinishedError:
            return
        if ending is not None and idle_s is None:
            return  # the session's last call, and no waiting for another


class _SessionThreads:
    """What a :func:`thread_starter` block holds: its starter thread and its waiting threads."""

    __slots__ = ("starter", "idle")

    def __init__(self, starter: ThreadRunner, idle: IdleThreads) -> None:
        self.starter = starter
        self.idle = idle


_threads: trio.lowlevel.RunVar[_SessionThreads | None] = trio.lowlevel.RunVar("openenv_anyio_session_threads", None)


class ThreadRunner:
    """An OS thread for one session's sync calls, the same thread for every call.

    If the waiting task is cancelled while a call runs, the runner stops waiting for that
    call (the thread finishes it in the background); later calls queue behind it.
    :meth:`aclose` lets the thread run out: once it returns, the thread has run this
    session's last call (a daemon; it is not joined, see there). If a call was abandoned,
    the last call runs once the environment returns. Then the thread ends, or, for a runner
    of :meth:`open` within a :func:`thread_starter` block, waits for the next session.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        start: bool = True,
        idle: IdleThreads | None = None,
        waiting: tuple[_Jobs, threading.Thread] | None = None,
    ) -> None:
        """A runner on a new thread (started unless ``start`` is false; it waits in ``idle``
        for another session after this one), or on a ``waiting`` thread taken from one."""
        self._inbox = CompletionInbox.current()
        self._abandoned = False
        self._closed = False
        self._starting = False  # handed to a starter thread, which has not started it yet
        self._finished = False  # the thread has run this session's last call
        self._not_started: ThreadNotStarted | None = None
        if waiting is not None:
            self._jobs, self._thread = waiting
            return
        self._jobs = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=_serve,
            args=(self._jobs, self._inbox, idle),
            name=name or f"openenv-env-{next(_thread_numbers)}",
            daemon=True,
        )
        if start:
            self._thread.start()

    @classmethod
    async def open(cls, name: str | None = None) -> ThreadRunner:
        """A runner whose thread is ready without blocking the event loop.

        Within a :func:`thread_starter` block it is a thread waiting for a session if there
        is one (it keeps its own name), else a new one: ``Thread.start()`` waits until the
        new thread runs, and with thousands of busy threads that wait stalls the loop for
        every other connection (handshakes included), so the block's starter thread starts
        it and nobody waits: calls made meanwhile queue up for the thread, and if it cannot
        be started they raise :class:`ThreadNotStarted`. Outside one, a new thread is
        started on one of trio's cached worker threads before this returns, and ends with
        the session.
        """
        threads = _threads.get(None)
        if threads is None or threads.starter._closed:  # no block, or one that ended out of order
            runner = cls(name, start=False)
            # Shielded: a thread that started always reaches its runner, which the caller closes.
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(runner._thread.start)
            return runner
        waiting = threads.idle.take()
        if waiting is not None:
            return cls(waiting=waiting)
        runner = cls(name, start=False, idle=threads.idle)
        runner._starting = True
        threads.starter._jobs.put((runner._start, None, None))
        return runner

    @property
    def thread(self) -> threading.Thread:
        """The thread that runs this session's calls (it may run another session's later)."""
        return self._thread

    @property
    def alive(self) -> bool:
        """Whether this session's calls still run (or wait for a starter thread to start
        theirs): the last one has not returned."""
        return self._starting or (not self._finished and self._thread.is_alive())

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

    async def _submit(self, fn: Callable[[], Any], *, last: bool = False) -> Any:
        pending = _Pending(trio.lowlevel.current_task())
        self._jobs.put((fn, pending, self if last else None))
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
        """Stop this session's calls; ``final``, if given, is its last call, in the same
        hand-off (its error is raised here; a coroutine it returns is awaited on the loop).
        Once closed, closing again does nothing.

        Cancellable: a caller's time bound on a ``final`` that hangs holds (``SRV-FAULT-3``).
        The final call stays queued as the session's last, so the thread still runs it,
        whenever that is; :attr:`alive` tells whether it has.
        """
        if self._closed:
            return
        self._closed = True
        if self._not_started is not None:  # nothing ever ran: nothing to stop or close
            return
        if self._abandoned:  # a call still runs: the session's last call follows it, unwaited
            orphan = _Pending(trio.lowlevel.current_task())
            orphan.abandoned = True
            self._jobs.put((final or _STOP, orphan, self))
            return
        try:
            result = await self._submit(final or _STOP, last=True)
        except ThreadNotStarted:
            return
        if final is not None and inspect.isawaitable(result):
            await await_env_code(result)
        # A thread that ends is not joined here: joining blocks the loop until that thread
        # gets the GIL once more, which with thousands of busy threads stalls every other
        # connection (for seconds, in bench scenario 9).


@contextlib.asynccontextmanager
async def thread_starter(idle_s: float = IDLE_THREAD_S) -> AsyncIterator[None]:
    """Within the block, :meth:`ThreadRunner.open` hands a session a thread whose session
    has closed, if one waits (for ``idle_s`` at most; ``0``: none waits), else starts a new
    one from one dedicated thread, owned by the block. When the block ends, the starter and
    the waiting threads end; threads still serving a session end after it.

    A session opening costs one hand-off to the starter instead of a trip through trio's
    thread cache (bench/README.md, "Server CPU per connection"), or no start at all.
    """
    threads = _SessionThreads(ThreadRunner("openenv-thread-starter"), IdleThreads(idle_s))
    token = _threads.set(threads)
    try:
        yield
    finally:
        _threads.reset(token)
        threads.idle.close()
        with trio.CancelScope(shield=True):
            await threads.starter.aclose()
