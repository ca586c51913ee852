"""``openenv-anyio serve`` as a real process that a shell command restarts on the same port.

The kit's ``--restart-command`` (EXT-HAND-01) and the client's hand-over tests need a server
that stops (SIGTERM: it drains; or SIGKILL: a crash) and comes back on the same address.
:func:`restartable_server` starts one and yields a :class:`Restartable` whose
:attr:`~Restartable.command` is that restart, as a shell command: it runs this file, which
reads the process id and the arguments from a state folder, stops the process, starts the
same command line again and waits until ``/health`` answers. Leaving the block stops
whichever process is current.

    python tests/restartable.py STATE_DIR [--kill]
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment() -> dict[str, str]:
    paths = [str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _start(state: Path) -> int:
    """Start the recorded command line (its output appended to the state folder's log)."""
    argv = json.loads((state / "argv.json").read_text())
    with (state / "server.log").open("ab") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=_environment(), start_new_session=True
        )
    (state / "pid").write_text(str(process.pid))
    _wait_healthy(int((state / "port").read_text()), process)
    return process.pid


def _wait_healthy(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode} while starting")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"no /health on port {port} within {START_TIMEOUT_S:g} s")


def _stop(state: Path, signum: int) -> None:
    """Send ``signum`` to the current process and wait until it is gone."""
    pid = int((state / "pid").read_text())
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (started by another restart): poll for it
            if not _running(pid):
                return
        else:
            if finished:
                return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def restart(state: Path, *, kill: bool = False) -> None:
    """Stop the server (SIGTERM, or SIGKILL with ``kill``) and start it again on its port."""
    _stop(state, signal.SIGKILL if kill else signal.SIGTERM)
    _start(state)


@dataclass
class Restartable:
    """A running server and the shell commands that restart it."""

    state: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def command(self) -> str:
        """Restart by SIGTERM (the server drains and hands its sessions over)."""
        return shlex.join([sys.executable, str(Path(__file__).resolve()), str(self.state)])

    @property
    def kill_command(self) -> str:
        """Restart by SIGKILL (a crash)."""
        return self.command + " --kill"

    def restart(self, *, kill: bool = False) -> None:
        restart(self.state, kill=kill)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server (SIGTERM, or SIGKILL with ``kill``); :meth:`start` brings it back."""
        _stop(self.state, signal.SIGKILL if kill else signal.SIGTERM)

    def start(self) -> None:
        """Start the server again on its port (after :meth:`stop`)."""
        _start(self.state)

    def log(self) -> str:
        return (self.state / "server.log").read_text(errors="replace")


@contextlib.contextmanager
def restartable_server(target: str, state: Path, *args: str) -> Iterator[Restartable]:
    """``openenv-anyio serve TARGET ARGS...`` on a free port, restartable on that port."""
    state.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [sys.executable, "-m", "openenv_anyio", "serve", target, "--host", "127.0.0.1", "--port", str(port), *args]
    (state / "argv.json").write_text(json.dumps(argv))
    (state / "port").write_text(str(port))
    _start(state)
    try:
        yield Restartable(state, port)
    finally:
        _stop(state, signal.SIGTERM)


if __name__ == "__main__":
    restart(Path(sys.argv[1]), kill="--kill" in sys.argv[2:])
