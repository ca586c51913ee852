"""What a client may leave behind: its tasks (named after it) still running."""

from __future__ import annotations

import anyio


def client_tasks() -> list[str]:
    """Names of EnvClient tasks (reader, keep-alive) still running in this event loop."""
    return [task.name for task in anyio.get_running_tasks() if "EnvClient(" in (task.name or "")]
