"""The server's end of one environment process (``--isolate process``): start it, ask it, end it.

Theory of operation. A session that runs its environment in a process of its own owns one
:class:`EnvProcess`. It is forked by multiprocessing's fork server (started once per server
process, with this package's modules preloaded, so a session's process starts without
importing anything the server has imported) and talks over a socket pair, one request and
one reply at a time (:mod:`.messages`). The process imports the serve target itself.

Failure is read from the channel, never guessed: a reply that never comes because the
channel closed means the process died (its exit status says how: a signal such as SIGSEGV,
or ``os._exit``); a reply later than the step timeout means the environment is stuck, and
the process is killed. Either way the process is reaped and the session learns it through
:class:`~openenv_anyio.server.execution.bound_env.EnvironmentLost`. Between requests the channel is
watched too (:meth:`EnvProcess.watch_idle`, a task of the session's): the process sends
nothing while IDLE, so the channel turning readable then means it died (or broke the
channel), and the session learns it at once rather than at its client's next request. The
watch never reads while a request does: a request's move to BUSY cancels it, and it waits
again once the process is IDLE. A request abandoned by its caller
(cancelled: the server is stopping) also kills the process, since its late reply would
answer the wrong request. :meth:`EnvProcess.end` is the one way out: close the channel, let
the process exit by itself for a bounded grace, then kill it; it always reaps the process.
The process dies when the server does, however it dies (no orphans): the kernel kills it
when its lifeline, a socket only the server holds open, hangs up (see ``child``).

States and transitions (anything else is a bug and raises)::

    STARTING --ready-->   IDLE        STARTING --lost--> LOST (the factory's process died)
    IDLE     --request--> BUSY        IDLE     --lost--> LOST (the channel was found closed,
                                                           by a request or by the idle watch)
    BUSY     --reply-->   IDLE        BUSY     --lost--> LOST (died, timed out or abandoned)
    any      --end-->     ENDED
"""

from __future__ import annotations

import contextlib
import enum
import math
import multiprocessing
import signal
import socket
from typing import Any, Final, assert_never

import trio

from ..execution.bound_env import EnvironmentLost
from .child import ORPHAN_EXIT_STATUS, run_child
from .messages import MessageError, MessageReader, encode_message

__all__ = ["EnvProcess", "ProcessState", "exit_text"]

_READ_SIZE: Final = 1 << 16
#: How long the server waits for a dead process's exit status before it kills it anyway.
_REAP_WAIT_S: Final = 5.0


class ProcessState(enum.Enum):
    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"
    LOST = "lost"
    ENDED = "ended"


_TRANSITIONS: Final[dict[tuple[ProcessState, str], ProcessState]] = {
    (ProcessState.STARTING, "ready"): ProcessState.IDLE,
    (ProcessState.STARTING, "lost"): ProcessState.LOST,
    (ProcessState.IDLE, "request"): ProcessState.BUSY,
    (ProcessState.IDLE, "lost"): ProcessState.LOST,
    (ProcessState.BUSY, "reply"): ProcessState.IDLE,
    (ProcessState.BUSY, "lost"): ProcessState.LOST,
    **{(state, "end"): ProcessState.ENDED for state in ProcessState},
}

_context: Any = None


def _fork_server(target: str) -> Any:
    """multiprocessing's fork-server context (set up once per server process).

    The fork server imports this package and the module of the first serve target before it
    forks anything, so a session's process starts with both imported: a server serves one
    target, and importing an environment's module (Gymnasium, a model library) can take
    seconds. Another target is imported by each of its processes.
    """
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        module = target.partition(":")[0].strip()
        context.set_forkserver_preload([run_child.__module__, *([module] if module else [])])
        _context = context
    return _context


def exit_text(exitcode: int | None) -> str:
    """How a process ended, in words (``exitcode`` as multiprocessing reports it)."""
    if exitcode is None:
        return "ended (its exit status is unknown)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    if exitcode == ORPHAN_EXIT_STATUS:
        return "ended: it lost its server"
    return f"exited with status {exitcode}"


class EnvProcess:
    """One environment process and the server's end of its channel (see the module doc)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.state = ProcessState.STARTING
        self._reader = MessageReader()
        ours, theirs = socket.socketpair()
        self._theirs: socket.socket | None = theirs
        #: the process dies when this closes (its lifeline, see ``child``): closed once it is reaped
        self._lifeline, lifeline = socket.socketpair()
        self._ours = ours  # non-blocking once wrapped: the idle watch peeks at it directly
        self._stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
        self._idle_watch: trio.CancelScope | None = None
        self._state_changed = trio.lowlevel.ParkingLot()  # the idle watch waits here while not IDLE
        self._reaping = trio.Lock()  # one waiter on the process's sentinel at a time
        self._process = _fork_server(target).Process(
            target=run_child, args=(theirs, target, lifeline), name=f"openenv-env {target}", daemon=True
        )
        self._lifeline_theirs: socket.socket | None = lifeline
        #: why the process is gone (set on ``lost``)
        self.lost: EnvironmentLost | None = None

    def _move(self, event: str) -> ProcessState:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise RuntimeError(f"environment process of {self.target}: {event!r} in state {self.state.value}") from None
        if self._idle_watch is not None and self.state is not ProcessState.IDLE:
            self._idle_watch.cancel()  # a request (or the end) takes the channel from the watch
        self._state_changed.unpark_all()
        return self.state

    @property
    def pid(self) -> int | None:
        return self._process.pid  # type: ignore[no-any-return]

    def alive(self) -> bool:
        """Whether the process may still run (not yet reaped)."""
        return self.state is not ProcessState.ENDED

    async def start(self) -> dict[str, Any]:
        """Start the process and wait for its first message (``ready`` or ``failed``).

        Raises :class:`EnvironmentLost` when the process dies first."""
        # Process.start() talks to the fork server (and starts it, the first time): off the loop.
        # Not abandoned on cancellation: a process that started is always owned here.
        await trio.to_thread.run_sync(self._process.start)
        theirs, self._theirs = self._theirs, None
        if theirs is not None:
            theirs.close()  # the process holds its own copy: EOF here now means it is gone
        lifeline, self._lifeline_theirs = self._lifeline_theirs, None
        if lifeline is not None:
            lifeline.close()
        first = await self._read()
        if first is None:
            await self._lose("while the environment was being created")
            assert self.lost is not None
            raise self.lost
        self._move("ready")
        return first

    async def request(self, message: dict[str, Any], timeout_s: float | None) -> dict[str, Any]:
        """Send ``message``, return the reply; raise :class:`EnvironmentLost` when the process
        died, is found dead, or took longer than ``timeout_s`` (then it is killed)."""
        if self.lost is not None:
            raise self.lost
        self._move("request")
        answered = False
        try:
            with trio.move_on_after(math.inf if timeout_s is None else timeout_s) as deadline:
                try:
                    await self._stream.send_all(encode_message(message))
                    reply = await self._read()
                except trio.BrokenResourceError:
                    reply = None
            if deadline.cancelled_caught:
                self._kill()
                await self._lose(f"and was stopped: the request ran longer than the step timeout ({timeout_s:g} s)")
            elif reply is None:
                await self._lose(f"during {message.get('op')}")
            else:
                answered = True
                self._move("reply")
                return reply
        finally:
            if not answered and self.state is ProcessState.BUSY:  # cancelled, or a bad message
                self._kill()
                with trio.CancelScope(shield=True):
                    await self._lose(f"during {message.get('op')}: the request was abandoned")
        assert self.lost is not None
        raise self.lost

    async def watch_idle(self) -> EnvironmentLost | None:
        """Return once the process is found gone while IDLE (its channel readable with no
        request asked: end of file, or bytes nobody asked for, after which it is killed);
        ``None`` once it ended otherwise (a request found it lost, or :meth:`end`). Run by
        its session beside the session's requests, in a task of its own."""
        while True:
            match self.state:
                case ProcessState.IDLE:
                    with trio.CancelScope() as self._idle_watch:
                        try:
                            await trio.lowlevel.wait_readable(self._ours)
                        except trio.ClosedResourceError:  # ended meanwhile
                            pass
                    self._idle_watch = None
                    if self.state is ProcessState.IDLE and self._found_closed():
                        await self._lose("while its session was idle")
                        return self.lost
                case ProcessState.STARTING | ProcessState.BUSY:
                    await self._state_changed.park()
                case ProcessState.LOST | ProcessState.ENDED:
                    return None
                case _:
                    assert_never(self.state)

    def _found_closed(self) -> bool:
        """Read what an IDLE process's channel holds, without waiting: ``True`` when it
        closed or carried bytes nobody asked for (the process is then killed)."""
        try:
            data = self._ours.recv(_READ_SIZE)
        except BlockingIOError:
            return False  # woken for nothing
        except OSError:
            return True
        if data:
            self._kill()
        return True

    async def _read(self) -> dict[str, Any] | None:
        """The next message; ``None`` when the channel closed (or carried garbage: the
        process is then treated as lost, and killed)."""
        reader = self._reader
        try:
            while (message := reader.next()) is None:
                data = await self._stream.receive_some(max(_READ_SIZE, reader.wanted()))
                if not data:
                    return None
                reader.feed(data)
        except (MessageError, trio.BrokenResourceError):
            self._kill()
            return None
        return message

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
            if self._process.exitcode is None:
                self._process.kill()

    async def _reap(self, wait_s: float) -> int | None:
        """Wait up to ``wait_s`` for the process to end, kill it if it has not, and reap it."""
        process = self._process
        if process.pid is None:  # never started
            return None
        async with self._reaping:
            if process.exitcode is None:
                with trio.move_on_after(wait_s):
                    await trio.lowlevel.wait_readable(process.sentinel)
            if process.exitcode is None:
                self._kill()
                await trio.lowlevel.wait_readable(process.sentinel)
        self._lifeline.close()  # reaped: nothing left for it to end
        return process.exitcode  # type: ignore[no-any-return]

    async def _lose(self, when: str) -> None:
        """The process is gone (or being killed): reap it and record why, for every caller
        (a request that comes while it is reaped finds it lost already)."""
        if self.state not in (ProcessState.LOST, ProcessState.ENDED):
            self._move("lost")
        self.lost = EnvironmentLost(f"the environment's process {exit_text(None)} {when}")
        exitcode = await self._reap(_REAP_WAIT_S)
        self.lost = EnvironmentLost(f"the environment's process {exit_text(exitcode)} {when}")

    async def end(self, grace_s: float) -> None:
        """Close the channel, give the process ``grace_s`` to exit, kill it after that, reap
        it. Shielded and idempotent: once it returns, the process is gone."""
        if self.state is ProcessState.ENDED:
            return
        with trio.CancelScope(shield=True):
            self._move("end")
            await self._stream.aclose()
            if self._theirs is not None:
                self._theirs.close()
                self._theirs = None
            if self._lifeline_theirs is not None:
                self._lifeline_theirs.close()
                self._lifeline_theirs = None
            await self._reap(grace_s)
            self._lifeline.close()  # never started (nothing reaped)
            with contextlib.suppress(ValueError):
                self._process.close()
