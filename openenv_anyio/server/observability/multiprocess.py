"""Metrics across worker processes: prometheus-client's multiprocess mode.

prometheus-client picks where values live when it is first imported: in memory, or, when
``PROMETHEUS_MULTIPROC_DIR`` names a directory, in one memory-mapped file per process there.
Multi-process serving therefore goes like this:

1. the parent calls :func:`enable` with an empty directory before it starts the workers, as
   new interpreters (``subprocess``, or ``multiprocessing``'s ``spawn``): they inherit the
   variable and import ``prometheus_client`` with it set. A worker forked from a process
   that had already imported it would keep its values in memory: its server refuses to
   start (``RuntimeError``) rather than serve partial figures;
2. every worker serves as usual: its metrics go to its own files, and ``GET /metrics`` on
   any worker reads every worker's files (:func:`~.metrics.exposition`);
3. when a worker exits, the parent calls :func:`worker_exited` with its pid, so its live
   gauges (sessions, subscribers) stop counting; its counters keep their totals.

``serve --workers N`` does this in :mod:`openenv_anyio.server.workers.supervisor`
(``worker_environment`` names the directory, ``worker_exited`` tells the metrics).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["ENV_VAR", "enable", "multiprocess_directory", "worker_exited"]

ENV_VAR: Final = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_directory() -> str | None:
    """The directory workers write their metrics to, or ``None`` (one process)."""
    return os.environ.get(ENV_VAR) or None


def enable(directory: str | os.PathLike[str]) -> None:
    """Make the worker processes started from now on count metrics in ``directory``.

    The directory is created when missing and must be empty (``ValueError``: values left by
    an earlier run would be added to this one's).
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        raise ValueError(f"metrics directory {path} is not empty (values of an earlier run)")
    os.environ[ENV_VAR] = str(path)


def worker_exited(pid: int, directory: str | os.PathLike[str]) -> None:
    """A worker process that counted in ``directory`` ended: drop its live gauges (call in
    the parent)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]
