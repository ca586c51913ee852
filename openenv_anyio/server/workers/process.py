"""A worker process of ``openenv-anyio serve --workers N``: ``python -m
openenv_anyio.server.workers.process SPEC_JSON`` (started by the supervisor only).

It serves the environment on the inherited listening socket until its standard input
ends (the supervisor closed it, or exited) or it gets SIGINT/SIGTERM, then shuts down as a
single server does (sessions closed with 1001, or handed over to its session store,
environments closed) and exits 0. When the supervisor wrote :data:`.role.RETIRE` before closing
standard input, a replacement serves this worker's slot (a rolling restart): the connections
it would serve go there while it drains (:meth:`.routing.OwnerRouter.retire`).
"""

from __future__ import annotations

import os
import signal
import sys

import trio

from ...envs.loading import resolve_env_target
from ..env_server import EnvServer
from ..isolation import ProcessIsolated
from ..observability.log_setup import configure_logging_from_environment
from ..observability.tracing import TRACES_ENV_VAR, flush_exporter, install_exporter
from .role import RETIRE, WorkerRole, WorkerSpec

__all__ = ["main", "run_worker"]


async def _stop_requested(role: WorkerRole) -> None:
    """Return on SIGINT/SIGTERM or when standard input ends (retired first when it said so)."""
    async with trio.open_nursery() as watchers:

        async def on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            watchers.cancel_scope.cancel()

        async def on_end_of_input() -> None:
            stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            said = b""
            async with stdin:
                while chunk := await stdin.receive_some(4096):
                    said = (said + chunk)[-64:]
            if RETIRE in said:
                role.router.retire()
            watchers.cancel_scope.cancel()

        watchers.start_soon(on_signal)
        watchers.start_soon(on_end_of_input)


async def run_worker(server: EnvServer, role: WorkerRole, ready_fd: int) -> None:
    """Serve until asked to stop; once listening, the table and ``ready_fd`` say so."""
    # Signals that come during the shutdown are taken (and ignored) rather than interrupting it.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            role.table.mark_serving(role.slot)
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
            await _stop_requested(role)
            server.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m openenv_anyio.server.workers.process SPEC_JSON (started by `serve --workers`)",
            file=sys.stderr,
        )
        return 2
    spec = WorkerSpec.from_json(args[0])
    configure_logging_from_environment()  # as the serving command chose; records carry "worker"
    config = spec.server_config(os.environ)  # once: it takes the tokens out of the environment
    traces = os.environ.get(TRACES_ENV_VAR) if config.traces else None
    if traces:
        install_exporter(traces)
    role = WorkerRole(spec)
    local = resolve_env_target(spec.target)
    factory = ProcessIsolated(spec.target, local) if config.isolate == "process" else local
    server = EnvServer(factory, config, worker=role)
    try:
        trio.run(run_worker, server, role, spec.ready_fd)
    finally:
        if traces:
            flush_exporter()
    stuck = server.stuck_envs()
    if stuck:  # SRV-FAULT-3, as a single server reports it; the supervisor reports the status
        print(
            f"openenv-anyio[worker {spec.slot}]: {', '.join(stuck)} did not close in time; exiting anyway",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
