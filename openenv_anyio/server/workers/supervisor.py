"""``openenv-anyio serve TARGET --workers N``: N worker processes serving one port.

The supervisor (this process) binds the listening socket and starts the workers; it never
accepts a connection itself. Each worker is a full server (:mod:`.process`) that accepts
from the shared socket and routes what belongs elsewhere to its owner (:mod:`.routing`).
What they share lives in a runtime directory made for this server (removed at exit):

- ``table``: the worker table (:mod:`.table`): sessions per worker, for the server-wide
  capacity limit and for balancing, and each slot's generation;
- ``metrics/``: the directory named by ``PROMETHEUS_MULTIPROC_DIR`` in every worker's
  environment (:meth:`WorkerSupervisor.worker_environment`), for prometheus-client's
  multiprocess mode; :meth:`WorkerSupervisor.worker_exited` runs when a worker process
  ends (the place to tell the metrics it is gone).

Theory of operation. One task per slot runs that slot's process: start it, wait until it
reports ``ready`` on a pipe, wait for it to exit. An exit that nobody asked for is a dead
worker: the slot's generation moves on (so resumes of its sessions get
``SESSION_NOT_FOUND`` wherever they land), its count of sessions goes to 0, and a new
process starts (after a pause that doubles while workers keep dying young). On
:meth:`shutdown` (the CLI calls it on SIGINT/SIGTERM) every worker's standard input is
closed; a worker takes that as its shutdown signal (and also when the supervisor dies),
closes its sessions with 1001 and exits; a worker still running after the grace period is
killed. Workers run in sessions of their own, so a terminal's Ctrl-C reaches the
supervisor only, which stops them in order.

Rolling restart (:meth:`roll`; the CLI calls it on SIGHUP): the slots are replaced one at a
time. For slot k a replacement process starts beside the one serving (same slot, same
generation: it serves the session ids the old one made, and takes the connections routed
to the slot's inbox); once it reports ``ready`` the old one is asked to stop as on
shutdown. With a session store the old one hands its resumable sessions over (close 1012)
and their clients' resumes are routed to the slot, where the replacement takes them from
the store; without one they end as on shutdown. While it drains, the old one hands every
connection it accepts and would serve itself to the replacement (:data:`.role.RETIRE`
on its standard input, then end of input). The two count their sessions in the slot's two
tallies of the worker table; when the old one exits its tally is dropped (a process killed
while it drained counts nothing any more). The next slot starts only once the old
process has exited. A replacement that does not become ready in time is stopped, the old
one keeps serving, and the rolling restart stops there (said in the log). A replacement is
a new interpreter: it runs the code and environment module found on disk at that moment.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import trio

from ..config import ServerConfig
from ..context import session_limit
from ..observability import multiprocess
from ..observability.log_setup import WORKER_ENV_VAR
from ..os_limits import listen_backlog
from .role import RETIRE, SECRETS_ENV, WorkerSpec, split_secrets
from .table import WorkerTable

__all__ = ["WorkerSupervisor", "worker_count"]

log = logging.getLogger("openenv_anyio.server.workers")

#: First pause before restarting a worker that died young; doubles up to the maximum.
RESTART_BACKOFF_S: Final = 0.5
MAX_RESTART_BACKOFF_S: Final = 10.0
#: A worker that lived this long was not dying young.
HEALTHY_AFTER_S: Final = 10.0
#: How long a worker may take to start listening.
START_TIMEOUT_S: Final = 60.0


def worker_count(text: str) -> int:
    """``--workers``: a positive number, or ``auto`` (one per usable core)."""
    if text == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"--workers takes a positive number or 'auto', not {text!r}") from None
    if count < 1:
        raise ValueError(f"--workers takes a positive number or 'auto', not {text!r}")
    return count


class WorkerFailed(RuntimeError):
    """A worker could not be started."""


@dataclass(eq=False)
class _Process:
    """One process run for a slot (a slot has two while a rolling restart replaces it)."""

    spec: WorkerSpec
    ready: trio.Event = field(default_factory=trio.Event)
    exited: trio.Event = field(default_factory=trio.Event)
    #: asked to stop alone: a replacement serves its slot
    retire: trio.Event = field(default_factory=trio.Event)
    pid: int | None = None
    status: int | None = None
    #: the process that serves the slot after this one (a rolling restart)
    successor: _Process | None = None


class WorkerSupervisor:
    """Runs ``workers`` worker processes serving ``target`` on one port."""

    def __init__(self, target: str, config: ServerConfig, workers: int, *, max_sessions: int | None) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.target = target
        self.config = config
        self.workers = workers
        self.max_sessions = max_sessions
        self.url: str | None = None
        self.runtime_dir: Path | None = None
        self.pids: dict[int, int] = {}  # slot -> pid of its running process
        self.restarts = 0
        self._unclean: list[str] = []  # workers that exited non-zero when asked to stop
        self._stop = trio.Event()
        self._roll_wanted = trio.Event()
        self._rolling = False
        self._current: dict[int, _Process] = {}  # slot -> the process that serves it
        self._started: tuple[socket.socket, list[tuple[socket.socket, socket.socket]], WorkerTable] | None = None
        self._nursery: trio.Nursery | None = None

    @classmethod
    def for_factory(cls, target: str, factory: object, config: ServerConfig, workers: int) -> WorkerSupervisor:
        """The limit as one server would apply it (the env's own cap included)."""
        return cls(target, config, workers, max_sessions=session_limit(factory, config.max_concurrent_envs))  # type: ignore[arg-type]

    def stuck_envs(self) -> list[str]:
        """After :meth:`serve`: the workers whose shutdown left environments still closing
        (each named what was stuck on its own standard error)."""
        return list(self._unclean)

    def shutdown(self) -> None:
        """Stop every worker (call from the supervisor's trio thread)."""
        self._stop.set()
        self._roll_wanted.set()

    def roll(self) -> None:
        """Replace every worker, one at a time (call from the supervisor's trio thread; see
        the module docstring). Asked during a rolling restart, another follows it."""
        if self._rolling:
            log.info("rolling restart asked while one runs: another follows it")
        self._roll_wanted.set()

    # -- hooks for what every worker process needs ---------------------------------------

    def worker_environment(self, slot: int) -> dict[str, str]:
        """The environment a worker process starts with (one place for all of it)."""
        assert self.runtime_dir is not None
        return {
            **os.environ,
            multiprocess.ENV_VAR: str(self.runtime_dir / "metrics"),
            WORKER_ENV_VAR: str(slot),
            SECRETS_ENV: split_secrets(self.config)[1],
        }

    def worker_exited(self, slot: int, pid: int) -> None:
        """A worker process ended (asked to or not); runs before any restart of the slot."""
        log.debug("worker %d (pid %d) ended", slot, pid)
        if self.runtime_dir is not None:  # its live gauges stop counting; its counters stay
            multiprocess.worker_exited(pid, self.runtime_dir / "metrics")

    # -- serving -------------------------------------------------------------------------

    def _listen(self) -> socket.socket:
        host, port = self.config.host, self.config.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(listen_backlog(self.config.listen_backlog, self.max_sessions))
        except BaseException:
            sock.close()
            raise
        return sock

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the workers, report the URL once all listen, run until :meth:`shutdown`."""
        self._stop, self._roll_wanted = trio.Event(), trio.Event()
        runtime = Path(tempfile.mkdtemp(prefix="openenv-anyio-"))
        self.runtime_dir = runtime
        (runtime / "metrics").mkdir()
        listener = self._listen()
        # SEQPACKET: one message per hand-off like datagrams, but not capped at the kernel's
        # ten queued datagrams (net.unix.max_dgram_qlen), which starved bursts of hand-offs
        inboxes = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(self.workers)]
        table = WorkerTable.create(runtime / "table", self.workers, self.max_sessions)
        try:
            host, port = listener.getsockname()[:2]
            url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
            self._started = (listener, inboxes, table)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                ready = [trio.Event() for _ in range(self.workers)]
                async with trio.open_nursery() as slots:
                    for slot in range(self.workers):
                        slots.start_soon(self._run_slot, slot, table, ready[slot])
                    with trio.fail_after(START_TIMEOUT_S):
                        for event in ready:
                            await event.wait()
                    self.url = url
                    nursery.start_soon(self._roll_when_asked)
                    task_status.started(url)
                self._roll_wanted.set()  # every slot stopped: so does the roller
        finally:
            self._started = self._nursery = None
            table.close()
            listener.close()
            for pair in inboxes:
                for end in pair:
                    end.close()
            shutil.rmtree(runtime, ignore_errors=True)

    def _spec(self, slot: int, generation: int, tally: int = 0) -> WorkerSpec:
        assert self._started is not None
        listener, inboxes, table = self._started
        return WorkerSpec(
            target=self.target,
            config=split_secrets(self.config)[0],
            slot=slot,
            generation=generation,
            tally=tally,
            listen_fd=listener.fileno(),
            inbox_fd=inboxes[slot][0].fileno(),
            peer_fds=[pair[1].fileno() for pair in inboxes],
            table_path=str(table.path),
            ready_fd=-1,
        )

    async def _run_slot(self, slot: int, table: WorkerTable, first_ready: trio.Event) -> None:
        generation = table.generation(slot)
        backoff = RESTART_BACKOFF_S
        while True:
            started_at = trio.current_time()
            process = self._current[slot] = _Process(self._spec(slot, generation))
            await self._run_process(process, first_ready if not first_ready.is_set() else None)
            if not first_ready.is_set():
                raise WorkerFailed(f"worker {slot} exited before it was ready (status {process.status})")
            while process.successor is not None:  # replaced (a rolling restart): its successor serves
                process = process.successor
                await process.exited.wait()
                started_at = trio.current_time()
            status = process.status
            if self._stop.is_set():
                if status:
                    self._unclean.append(f"of worker {slot} (exit status {status})")
                return
            self.restarts += 1
            generation = table.restart(slot)
            young = trio.current_time() - started_at < HEALTHY_AFTER_S
            log.warning(
                "worker %d exited (status %s); its sessions are lost; restarting it%s",
                slot,
                status,
                f" in {backoff:g} s" if young else "",
            )
            if young:
                with trio.move_on_after(backoff):
                    await self._stop.wait()
                if self._stop.is_set():
                    return
                backoff = min(backoff * 2, MAX_RESTART_BACKOFF_S)
            else:
                backoff = RESTART_BACKOFF_S

    # -- rolling restart -----------------------------------------------------------------

    async def _roll_when_asked(self) -> None:
        while True:
            await self._roll_wanted.wait()
            self._roll_wanted = trio.Event()
            if self._stop.is_set() or self._started is None:
                return
            self._rolling = True
            try:
                await self._roll()
            finally:
                self._rolling = False

    async def _roll(self) -> None:
        """Replace each slot's process in turn (see the module docstring)."""
        log.info("rolling restart: replacing %d workers one at a time", self.workers)
        for slot in range(self.workers):
            if self._stop.is_set():
                return
            if not await self._replace(slot):
                log.error("rolling restart stopped at worker %d; the workers not yet replaced keep serving", slot)
                return
        log.info("rolling restart: done, %d workers replaced", self.workers)

    async def _replace(self, slot: int) -> bool:
        """Start slot's replacement, wait until it is ready, then stop the old process and
        wait for it to exit; ``False`` when the replacement did not become ready."""
        assert self._nursery is not None
        old = self._current[slot]
        if old.exited.is_set() or old.successor is not None:  # dead and being restarted
            log.warning("rolling restart: worker %d is restarting; left to that", slot)
            return True
        assert self._started is not None
        table = self._started[2]
        tally = 1 - old.spec.tally  # the replacement counts apart from the old one
        table.clear(slot, tally)
        new = old.successor = _Process(self._spec(slot, old.spec.generation, tally))
        self._nursery.start_soon(self._run_replacement, new)
        with trio.move_on_after(START_TIMEOUT_S):
            async with trio.open_nursery() as either:
                for event in (new.ready, new.exited):
                    either.start_soon(_cancel_when_set, event, either.cancel_scope)
        if self._stop.is_set():
            return True
        if not new.ready.is_set():
            if not old.exited.is_set():
                old.successor = None  # the old one keeps the slot
                if old.pid is not None:
                    self.pids[slot] = old.pid
            new.retire.set()
            log.error(
                "rolling restart: the replacement of worker %d %s; the old one (pid %s) keeps serving",
                slot,
                f"exited (status {new.status})" if new.exited.is_set() else "did not become ready in time",
                old.pid,
            )
            return False
        self._current[slot] = new
        log.info(
            "rolling restart: worker %d: replacement ready (pid %s); draining the old one (pid %s)",
            slot,
            new.pid,
            old.pid,
        )
        old.retire.set()
        await old.exited.wait()
        table.clear(slot, old.spec.tally)  # its sessions ended with it, or were killed with it
        log.info("rolling restart: worker %d: the old one (pid %s) exited (status %s)", slot, old.pid, old.status)
        return True

    async def _run_replacement(self, proc: _Process) -> None:
        try:
            await self._run_process(proc, None)
        except OSError as exc:  # the server goes on with the process it has
            log.error("rolling restart: worker %d: its replacement could not be started: %s", proc.spec.slot, exc)

    async def _run_process(self, proc: _Process, first_ready: trio.Event | None) -> None:
        """Run one process for ``proc``'s slot until it exits (its status in ``proc``);
        ``first_ready``: set too once it is ready (the slot's first process)."""
        ready_r, ready_w = os.pipe()
        spec = proc.spec = WorkerSpec(**{**asdict(proc.spec), "ready_fd": ready_w})
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "openenv_anyio.server.workers.process", spec.to_json()],
                pass_fds=spec.fds,
                stdin=subprocess.PIPE,
                start_new_session=True,
                env=self.worker_environment(spec.slot),
            )
        except BaseException:
            os.close(ready_r)
            proc.exited.set()
            raise
        finally:
            os.close(ready_w)
        proc.pid = self.pids[spec.slot] = process.pid
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_ready, proc, ready_r, first_ready)
                nursery.start_soon(self._stop_when_asked, process, proc)
                await process.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:  # the supervisor itself is being cancelled
                    process.kill()
                    await process.wait()
            if self.pids.get(spec.slot) == process.pid:
                del self.pids[spec.slot]
            self.worker_exited(spec.slot, process.pid)
            proc.status = process.returncode
            proc.exited.set()

    async def _watch_ready(self, proc: _Process, ready_r: int, first_ready: trio.Event | None) -> None:
        stream = trio.lowlevel.FdStream(ready_r)
        async with stream:
            data = b""
            while b"\n" not in data:
                chunk = await stream.receive_some(64)
                if not chunk:
                    return
                data += chunk
        if data.startswith(b"ready"):
            spec = proc.spec
            if spec.generation and first_ready is None and self._current.get(spec.slot) is proc:
                log.warning("worker %d restarted (pid %s, generation %d)", spec.slot, proc.pid, spec.generation)
            proc.ready.set()
            if first_ready is not None:
                first_ready.set()

    async def _stop_when_asked(self, process: trio.Process, proc: _Process) -> None:
        async with trio.open_nursery() as either:  # the server stops, or this process alone
            for event in (self._stop, proc.retire):
                either.start_soon(_cancel_when_set, event, either.cancel_scope)
        assert process.stdin is not None
        try:
            if proc.retire.is_set() and not self._stop.is_set():  # its replacement serves the slot
                await process.stdin.send_all(RETIRE)
            await process.stdin.aclose()  # the worker's signal to shut down
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        with trio.move_on_after(self.config.drain_timeout_s + self.config.shutdown_grace_s * 3 + 10):
            await process.wait()
            return
        log.warning("worker (pid %d) did not stop in time; killing it", process.pid)
        process.kill()


async def _cancel_when_set(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
