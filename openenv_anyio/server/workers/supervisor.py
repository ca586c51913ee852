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
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Final

import trio

from ..config import ServerConfig
from ..context import session_limit
from ..observability import multiprocess
from ..observability.log_setup import WORKER_ENV_VAR
from ..os_limits import listen_backlog
from .role import SECRETS_ENV, WorkerSpec, split_secrets
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
        self._stop = trio.Event()
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
            async with trio.open_nursery() as nursery:
                ready = [trio.Event() for _ in range(self.workers)]
                for slot in range(self.workers):
                    nursery.start_soon(self._run_slot, slot, listener, inboxes, table, ready[slot])
                with trio.fail_after(START_TIMEOUT_S):
                    for event in ready:
                        await event.wait()
                self.url = url
                task_status.started(url)
        finally:
            table.close()
            listener.close()
            for pair in inboxes:
                for end in pair:
                    end.close()
            shutil.rmtree(runtime, ignore_errors=True)

    async def _run_slot(
        self,
        slot: int,
        listener: socket.socket,
        inboxes: list[tuple[socket.socket, socket.socket]],
        table: WorkerTable,
        first_ready: trio.Event,
    ) -> None:
        generation = table.generation(slot)
        backoff = RESTART_BACKOFF_S
        while True:
            started_at = trio.current_time()
            ready = trio.Event() if first_ready.is_set() else first_ready
            spec = WorkerSpec(
                target=self.target,
                config=split_secrets(self.config)[0],
                slot=slot,
                generation=generation,
                listen_fd=listener.fileno(),
                inbox_fd=inboxes[slot][0].fileno(),
                peer_fds=[pair[1].fileno() for pair in inboxes],
                table_path=str(table.path),
                ready_fd=-1,
            )
            status = await self._run_process(spec, ready)
            if not first_ready.is_set():
                raise WorkerFailed(f"worker {slot} exited before it was ready (status {status})")
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

    async def _run_process(self, spec: WorkerSpec, ready: trio.Event) -> int | None:
        """Run one process for ``spec``'s slot until it exits; its exit status."""
        ready_r, ready_w = os.pipe()
        spec = WorkerSpec(**{**asdict(spec), "ready_fd": ready_w})
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
            raise
        finally:
            os.close(ready_w)
        self.pids[spec.slot] = process.pid
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_ready, spec, process.pid, ready_r, ready)
                nursery.start_soon(self._stop_when_asked, process)
                await process.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:  # the supervisor itself is being cancelled
                    process.kill()
                    await process.wait()
            self.pids.pop(spec.slot, None)
            self.worker_exited(spec.slot, process.pid)
        return process.returncode

    async def _watch_ready(self, spec: WorkerSpec, pid: int, ready_r: int, ready: trio.Event) -> None:
        stream = trio.lowlevel.FdStream(ready_r)
        async with stream:
            data = b""
            while b"\n" not in data:
                chunk = await stream.receive_some(64)
                if not chunk:
                    return
                data += chunk
        if data.startswith(b"ready"):
            if spec.generation:
                log.warning("worker %d restarted (pid %d, generation %d)", spec.slot, pid, spec.generation)
            ready.set()

    async def _stop_when_asked(self, process: trio.Process) -> None:
        await self._stop.wait()
        assert process.stdin is not None
        try:
            await process.stdin.aclose()  # the worker's signal to shut down
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        with trio.move_on_after(self.config.drain_timeout_s + self.config.shutdown_grace_s * 3 + 10):
            await process.wait()
            return
        log.warning("worker (pid %d) did not stop in time; killing it", process.pid)
        process.kill()
