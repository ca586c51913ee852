"""``openenv-anyio serve --reload``: serve, and serve afresh whenever a source file changes.

Theory of operation. The command becomes a watcher that owns one server process at a time:
it starts ``openenv-anyio serve`` with the same arguments (but ``--reload``) as a child, takes
a snapshot of the ``.py`` files under the watched folder (path -> modification time), and
compares a new snapshot every :data:`POLL_S` seconds. A difference ends the child (SIGTERM:
it drains as on any stop, bounded by :data:`STOP_TIMEOUT_S`, then SIGKILL) and starts the
next one. A child that exits on its own (an environment that no longer imports, a port in
use) is not restarted until the next change: the fix is the change. SIGINT or SIGTERM to the
watcher stops the child the same way and ends the watcher with status 0, as ``serve`` does.

Polling, not file-system notifications: no dependency, the same on every platform, and an
environment's folder is small. Folders whose names start with ``.`` and ``__pycache__`` are
not watched (virtual environments, caches, version control).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

__all__ = ["POLL_S", "serve_with_reload", "snapshot"]

#: how often the watched files are compared
POLL_S = 0.5
#: how long a server may take to stop after SIGTERM before it is killed
STOP_TIMEOUT_S = 30.0


def snapshot(folder: Path) -> dict[Path, int]:
    """The ``.py`` files under ``folder`` and their modification times (nanoseconds)."""
    found: dict[Path, int] = {}
    for root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(".") and name != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = Path(root, name)
                try:
                    found[path] = path.stat().st_mtime_ns
                except FileNotFoundError:  # removed while we looked: the next snapshot says so
                    continue
    return found


def _changed(before: dict[Path, int], after: dict[Path, int]) -> Path | None:
    """One file that was added, removed or modified between two snapshots, or None."""
    for path in sorted(before.keys() ^ after.keys()):
        return path
    for path, mtime in after.items():
        if before[path] != mtime:
            return path
    return None


async def _stop(process: trio.Process) -> None:
    """``run_process``'s way to stop the server: SIGTERM (it drains), SIGKILL if it outlives the bound."""
    process.send_signal(signal.SIGTERM)
    with trio.move_on_after(STOP_TIMEOUT_S):
        await process.wait()
        return
    process.kill()


async def _serve_until_changed(command: Sequence[str], folder: Path) -> Path:
    """Run the server until a file under ``folder`` changes; returns that file."""
    before = snapshot(folder)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(functools.partial(trio.run_process, list(command), check=False, deliver_cancel=_stop))
        while (changed := _changed(before, snapshot(folder))) is None:
            await trio.sleep(POLL_S)
        nursery.cancel_scope.cancel()  # ends the server: _stop
    return changed


async def _watch(command: Sequence[str], folder: Path) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def restart_on_change() -> None:
                while True:
                    changed = await _serve_until_changed(command, folder)
                    print(f"openenv-anyio serve: {changed} changed: restarting", file=sys.stderr, flush=True)

            nursery.start_soon(restart_on_change)
            async for _ in signals:
                nursery.cancel_scope.cancel()  # the server in hand is stopped (drained) first
                break


def serve_with_reload(serve_args: Sequence[str], folder: Path) -> int:
    """Serve with ``serve_args`` (the command line of ``serve`` without ``--reload``), afresh
    after every change of a ``.py`` file under ``folder``, until SIGINT or SIGTERM."""
    command = [sys.executable, "-m", "openenv_anyio", "serve", *serve_args]
    print(f"openenv-anyio serve: --reload: watching the .py files under {folder}", file=sys.stderr, flush=True)
    trio.run(_watch, command, folder)
    return 0
