"""What a client may leave behind: its tasks (named after it) still running."""

from __future__ import annotations

import anyio


def client_tasks() -> list[str]:
    """Names of EnvClient tasks (reader, keep-alive) still running in this event loop."""
    return [task.name for task in anyio.get_running_tasks() if "EnvClient(" in (task.name or "")]


async def wait_until_no_client_tasks(timeout_s: float = 5.0) -> None:
    """Wait (bounded) for the client's tasks to end; fail naming those still running."""
    with anyio.move_on_after(timeout_s):
        while client_tasks():
            await anyio.sleep(0.01)
    assert client_tasks() == []
