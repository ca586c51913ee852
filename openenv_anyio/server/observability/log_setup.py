"""``--log-format`` and ``--log-level`` of ``openenv-anyio serve``: one handler on the root
logger that renders every record (the server's structured events and plain ``logging``
records of Hypercorn and others alike) as one JSON object per line or as readable text.

The choice is also left in the environment (:data:`LOG_ENV_VAR`), so the worker processes
of ``serve --workers N`` log the same way (:func:`configure_logging_from_environment`);
their records carry ``worker`` (the slot)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Final, Literal, TextIO

import structlog

__all__ = [
    "LOG_ENV_VAR",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "LogFormat",
    "configure_logging",
    "configure_logging_from_environment",
]

LogFormat = Literal["console", "json"]
LOG_FORMATS: Final = ("console", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
#: ``FORMAT:LEVEL`` of the serving command, for its worker processes
LOG_ENV_VAR: Final = "OPENENV_ANYIO_LOG"
#: set by the supervisor in each worker's environment: the worker's slot
WORKER_ENV_VAR: Final = "OPENENV_ANYIO_WORKER"


def _add_worker(worker: int) -> structlog.types.Processor:
    def add_worker(logger: object, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        event.setdefault("worker", worker)
        return event

    return add_worker


def configure_logging(log_format: LogFormat, level: str, stream: TextIO | None = None) -> None:
    """Render every log record to ``stream`` (stderr) in ``log_format``, from ``level`` up.

    ``json``: one object per line with ``event``, ``level``, ``logger``, ``timestamp`` (ISO
    8601, UTC) and the event's fields. ``console``: ``timestamp level event key=value ...``.
    Third-party loggers stay at WARNING unless ``level`` is ``debug``.
    """
    match log_format:
        case "json":
            renderer: structlog.types.Processor = structlog.processors.JSONRenderer()
        case "console":
            renderer = structlog.dev.ConsoleRenderer(colors=False)
        case _:
            raise ValueError(f"unknown log format {log_format!r} (one of {', '.join(LOG_FORMATS)})")
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r} (one of {', '.join(LOG_LEVELS)})")
    worker = os.environ.get(WORKER_ENV_VAR)
    tags = [_add_worker(int(worker))] if worker and worker.isdigit() else []
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                *tags,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
            foreign_pre_chain=[structlog.stdlib.ExtraAdder()],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(numeric, logging.WARNING) if numeric > logging.DEBUG else numeric)
    logging.getLogger("openenv_anyio").setLevel(numeric)
    os.environ[LOG_ENV_VAR] = f"{log_format}:{level}"


def configure_logging_from_environment(default: tuple[LogFormat, str] = ("console", "warning")) -> None:
    """In a worker process: log as the serving command chose (:data:`LOG_ENV_VAR`)."""
    log_format, _, level = os.environ.get(LOG_ENV_VAR, "").partition(":")
    if log_format in LOG_FORMATS and level in LOG_LEVELS:
        configure_logging(log_format, level)  # type: ignore[arg-type]
    else:
        configure_logging(*default)
