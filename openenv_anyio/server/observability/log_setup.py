"""``--log-format`` and ``--log-level`` of ``openenv-anyio serve``: one handler on the root
logger that renders every record (the server's structured events and plain ``logging``
records of Hypercorn and others alike) as one JSON object per line or as readable text."""

from __future__ import annotations

import logging
import sys
from typing import Final, Literal, TextIO

import structlog

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "LogFormat", "configure_logging"]

LogFormat = Literal["console", "json"]
LOG_FORMATS: Final = ("console", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error")


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
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
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
