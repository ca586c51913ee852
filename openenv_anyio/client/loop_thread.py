"""An event loop on a thread of its own, shared by the blocking clients of a process.

Theory of operation. :class:`LoopThread` starts a daemon thread running an asyncio loop or
``trio.run`` and carries each blocking :meth:`~LoopThread.call` to it in one hand-off (a
thread-safe callback that starts the call as a task; the caller waits on a
``concurrent.futures.Future``). The blocking clients (``EnvClient.sync()``, the compat
clients) of one backend share one loop thread per process: a client takes a hold on it with
a :class:`LoopLease` when it first blocks and gives the hold back when it closes (or is
dropped unclosed); the last hold given back stops the loop and joins its thread, so no
thread is left once every client is closed. Sharing one loop keeps the threads that call to
a loop and the loop itself, where a loop per client doubled the threads that take turns on
the interpreter lock; no lock is taken per call (the registry's lock only when a client
takes or gives back its hold).

What runs on the loop and must end gracefully before it stops (a client's session: its close
frame must reach the server, so the reader must still run) registers as a resident
(:meth:`~LoopThread.hold`): :meth:`stop` closes the residents first, then ends the loop.

Interrupts: a ``KeyboardInterrupt`` (or any other exception) while the caller waits cancels
the call on the loop (a request cancelled before its answer gives its connection up, as
on any loop) and is raised as itself. Interpreter exit never hangs: the thread is a daemon,
and loops still running at exit are stopped by an ``atexit`` hook, each within
:data:`STOP_TIMEOUT_S`, so clients nobody closed still close their sessions. A blocking
call from the loop's own thread would wait for itself: it raises ``RuntimeError`` instead.

Fork: a process forked while the loop runs (``os.fork``, ``multiprocessing``) has no loop
thread; there the loop is ``FORKED``: a call raises :class:`UsedAfterFork` at once (it would
wait forever for the thread), and stopping, at exit too, waits for nothing. A client opened
in the child takes a hold on a new loop.

States (:class:`LoopState`): ``NEW`` -> ``RUNNING`` (:meth:`start`) -> ``STOPPED``
(:meth:`stop`, or the loop ended); ``NEW`` -> ``STOPPED`` too; ``RUNNING`` -> ``FORKED`` in
a forked child (``os.register_at_fork``) -> ``STOPPED`` (:meth:`stop`, without a call to the
loop). Nothing leaves ``STOPPED``.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import contextvars
import enum
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, Final, Protocol, TypeVar, assert_never

import anyio

from .errors import UsedAfterFork

__all__ = ["LoopLease", "LoopState", "LoopThread", "STOP_TIMEOUT_S", "THREAD_NAME"]

_T = TypeVar("_T")

#: how long stopping a loop may take (its clients' closes included) before it is left to die
#: with the interpreter
STOP_TIMEOUT_S: Final = 5.0
START_TIMEOUT_S: Final = 10.0
BACKENDS: Final = ("asyncio", "trio")
#: the name of the shared loop threads (followed by the backend)
THREAD_NAME: Final = "openenv-anyio blocking clients"


class LoopState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    FORKED = "forked"  # running in the process this one was forked from
    STOPPED = "stopped"


_live: weakref.WeakSet[LoopThread] = weakref.WeakSet()
_current = threading.local()
#: backend -> (its shared loop, the holds on it)
_shared: dict[str, tuple[LoopThread, int]] = {}
#: taken when a client takes or gives back its hold on a shared loop, never per call
_shared_lock = threading.Lock()
#: the thread holding ``_shared_lock`` (its ident), if any
_shared_owner: int | None = None
#: holds given back by a finalizer run while its own thread held ``_shared_lock`` (the
#: collector runs finalizers at any allocation): given back once that thread lets go
_given_back_later: collections.deque[LoopLease] = collections.deque()


@contextlib.contextmanager
def _holding_shared() -> Iterator[None]:
    """``_shared_lock``, then the holds given back meanwhile by this thread's finalizers."""
    global _shared_owner
    with _shared_lock:
        _shared_owner = threading.get_ident()
        try:
            yield
        finally:
            _shared_owner = None
    while _given_back_later:
        _given_back_later.popleft().release()


class Cancellable(Protocol):
    """A running call's handle: its asyncio task or its trio cancel scope."""

    def cancel(self) -> Any: ...


class Resident(Protocol):
    """Something living on a loop thread that closes itself gracefully."""

    async def close(self) -> None: ...


@atexit.register
def _stop_live_loops() -> None:
    for loop in list(_live):
        loop.stop()


def _forked_child() -> None:
    """In a child process just forked: the running loops' threads stayed in the parent."""
    global _shared_lock, _shared_owner
    for loop in list(_live):
        loop._left_in_parent()
    _live.clear()
    _shared.clear()
    _shared_lock = threading.Lock()  # another thread of the parent may have held it
    _shared_owner = None
    _given_back_later.clear()


os.register_at_fork(after_in_child=_forked_child)


class LoopThread:
    """One event loop (``backend``: ``"asyncio"`` or ``"trio"``) on one daemon thread."""

    def __init__(self, backend: str = "asyncio", *, name: str = THREAD_NAME) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.backend = backend
        self.state = LoopState.NEW
        self._name = name
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._call_soon: Callable[[Callable[[], object]], object] | None = None
        self._spawn: Callable[[Callable[[], Coroutine[Any, Any, None]], list[Cancellable]], object] | None = None
        self._finish: Callable[[], object] | None = None  # ends the loop, from the loop
        self._ended = threading.Event()
        self._residents: set[Resident] = set()

    def __repr__(self) -> str:
        return f"LoopThread({self.backend!r}, {self.state.value})"

    @property
    def running(self) -> bool:
        return self.state is LoopState.RUNNING

    @staticmethod
    def current() -> LoopThread | None:
        """The LoopThread whose thread the caller runs on, if any."""
        found: LoopThread | None = getattr(_current, "loop", None)
        return found

    def hold(self, resident: Resident) -> None:
        """Close ``resident`` before the loop stops (call on the loop)."""
        self._residents.add(resident)

    def let_go(self, resident: Resident) -> None:
        self._residents.discard(resident)

    async def _close_residents(self) -> None:
        with anyio.move_on_after(STOP_TIMEOUT_S):
            for resident in list(self._residents):
                await resident.close()

    def _left_in_parent(self) -> None:
        self._lock = threading.Lock()  # another thread of the parent may have held it
        if self.state is LoopState.RUNNING:
            self.state = LoopState.FORKED

    def in_loop_thread(self) -> bool:
        """Whether the caller runs on this loop's thread."""
        return self._thread is threading.current_thread()

    # -- lifetime --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread and its loop (idempotent while running; thread-safe)."""
        with self._lock:
            match self.state:
                case LoopState.RUNNING:
                    return
                case LoopState.STOPPED:
                    raise RuntimeError(f"{self!r} was stopped; a stopped loop does not start again")
                case LoopState.FORKED:
                    raise UsedAfterFork(
                        f"{self!r}: its client was opened in the process this one was forked from; its "
                        f"connection and event loop stayed there: create the client in this process"
                    )
                case LoopState.NEW:
                    pass
                case _:
                    assert_never(self.state)
            ready = threading.Event()
            failure: list[BaseException] = []
            self._thread = threading.Thread(target=self._main, args=(ready, failure), name=self._name, daemon=True)
            self._thread.start()
            if not ready.wait(START_TIMEOUT_S) or failure:
                self.state = LoopState.STOPPED
                cause = failure[0] if failure else None
                raise RuntimeError(f"the {self.backend} event loop thread did not start") from cause
            self.state = LoopState.RUNNING
            _live.add(self)

    def _main(self, ready: threading.Event, failure: list[BaseException]) -> None:
        _current.loop = self
        try:
            if self.backend == "asyncio":
                self._run_asyncio(ready)
            else:
                self._run_trio(ready)
        except BaseException as exc:  # reported to start(); the thread just ends
            failure.append(exc)
            ready.set()
        finally:
            self._ended.set()

    def _run_asyncio(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        tasks: set[asyncio.Task[None]] = set()

        def spawn(job: Callable[[], Coroutine[Any, Any, None]], handles: list[Cancellable]) -> None:
            task = loop.create_task(job())
            handles.append(task)
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        def call_soon(callback: Callable[[], object]) -> None:
            # in a context of its own: the caller's (its sniffio "current library" among
            # others) must not leak into the tasks of this loop
            loop.call_soon_threadsafe(callback, context=contextvars.Context())

        self._call_soon = call_soon
        self._spawn = spawn
        self._finish = loop.stop
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
            # what is still running (a client's host task) is cancelled and may finish
            for task in list(tasks):
                task.cancel()
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=STOP_TIMEOUT_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def _run_trio(self, ready: threading.Event) -> None:
        import trio

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                token = trio.lowlevel.current_trio_token()
                self._call_soon = token.run_sync_soon

                def spawn(job: Callable[[], Coroutine[Any, Any, None]], handles: list[Cancellable]) -> None:
                    async def scoped() -> None:
                        with trio.CancelScope() as scope:
                            handles.append(scope)
                            await job()

                    nursery.start_soon(scoped)

                self._spawn = spawn
                self._finish = nursery.cancel_scope.cancel
                ready.set()
                await trio.sleep_forever()

        trio.run(main)

    def stop(self) -> None:
        """Close the residents, end the loop (cancelling what still runs on it) and join the
        thread (idempotent). From the loop's own thread (a finalizer) it only schedules that."""
        with self._lock:
            state, self.state = self.state, LoopState.STOPPED
            _live.discard(self)
        if state is not LoopState.RUNNING or self._thread is None:
            return
        assert self._call_soon is not None and self._finish is not None and self._spawn is not None
        if self.in_loop_thread():
            finish = self._finish

            async def close_then_finish() -> None:
                try:
                    await self._close_residents()
                finally:
                    finish()

            self.start_soon(close_then_finish)
            return
        if self._residents:
            try:
                self._call(self._close_residents)
            except BaseException:  # stopping goes on: the residents were given their chance
                pass
        try:
            self._call_soon(self._finish)
        except RuntimeError:  # the loop already ended
            pass
        self._thread.join(STOP_TIMEOUT_S)

    # -- calls -----------------------------------------------------------------------------

    def call(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run ``await func(*args)`` on the loop and return its result (blocking)."""
        if not self.running:
            self.start()
        elif self._thread is threading.current_thread():
            raise RuntimeError(f"{self!r}: a blocking call from the loop's own thread would wait for itself")
        return self._call(func, *args)

    def start_soon(self, func: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Start ``await func()`` on the running loop and return at once (its outcome is not reported)."""
        assert self._call_soon is not None and self._spawn is not None
        spawn = self._spawn

        async def job() -> None:
            await func()

        try:
            self._call_soon(lambda: spawn(job, []))
        except RuntimeError:  # the loop already ended
            pass

    def _call(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        handles: list[Cancellable] = []

        async def job() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                value = await func(*args)
            except Exception as exc:
                future.set_exception(exc)
                return
            except BaseException:  # cancelled (the caller was interrupted): reported, then unwound
                future.set_exception(concurrent.futures.CancelledError())
                raise
            future.set_result(value)

        assert self._call_soon is not None and self._spawn is not None
        spawn = self._spawn
        try:
            self._call_soon(lambda: spawn(job, handles))
        except RuntimeError:  # the loop ended under us
            raise RuntimeError(f"{self!r} is not running") from None
        try:
            return future.result()
        except BaseException:
            if not future.done() and not future.cancel():
                self._cancel(handles)
            raise

    def _cancel(self, handles: list[Cancellable]) -> None:
        """Cancel a running call (from the caller's thread); it unwinds on the loop."""

        def cancel() -> None:
            for handle in handles:
                handle.cancel()

        assert self._call_soon is not None
        try:
            self._call_soon(cancel)
        except RuntimeError:
            pass


class LoopLease:
    """One blocking client's hold on the shared loop thread of its backend.

    Taken when the client first blocks; :meth:`release` (the client's ``close()``, or its
    finalizer when it is dropped unclosed) closes :attr:`resident`, the client's session, and
    gives the hold back; the last hold given back stops the loop and joins its thread.
    """

    def __init__(self, backend: str) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        with _holding_shared():
            loop, holds = _shared.get(backend, (None, 0))
            if loop is None or loop.state not in (LoopState.NEW, LoopState.RUNNING):
                loop, holds = LoopThread(backend, name=f"{THREAD_NAME} ({backend})"), 0
            _shared[backend] = (loop, holds + 1)
        self.loop: LoopThread = loop
        #: what to close when the hold is given back (the client's session)
        self.resident: Resident | None = None
        self._held = True

    def __repr__(self) -> str:
        return f"LoopLease({self.loop!r}, {'held' if self._held else 'released'})"

    def release(self) -> None:
        """Close the resident, then give the hold back (idempotent; from any thread)."""
        if _shared_owner == threading.get_ident():  # a finalizer run inside this thread's hold of the lock
            _given_back_later.append(self)
            return
        with _holding_shared():
            if not self._held:
                return
            self._held = False
            resident, self.resident = self.resident, None
        loop = self.loop
        if resident is not None and loop.running:
            if loop.in_loop_thread():  # a finalizer run on the loop: it cannot wait for the loop
                loop.start_soon(resident.close)
            else:
                try:
                    loop.call(resident.close)
                except Exception:  # the session is given up either way
                    pass
        with _holding_shared():
            found, holds = _shared.get(loop.backend, (None, 0))
            last = found is loop and holds <= 1
            if found is loop:
                if last:
                    del _shared[loop.backend]
                else:
                    _shared[loop.backend] = (loop, holds - 1)
        if last:
            loop.stop()
