"""Server and worker processes: spawn on a free loopback port, wait until ready, stop surely.

Every child runs in its own process group and is told by the kernel to die with its parent
(``PR_SET_PDEATHSIG``); ``stop()`` kills the whole group (SIGTERM, then SIGKILL), and is
called from ``finally`` blocks, so Ctrl-C never leaves a server behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parent.parent
_PR_SET_PDEATHSIG = 1
#: How long a server process may take to listen: openenv-core's imports alone took 34-45 s on
#: a busy 2-core machine (a quiet one: a few seconds), so 30 s failed healthy runs.
START_TIMEOUT_S = 120.0
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|ExceptionGroup|Exit)\b")


class ServerStartError(RuntimeError):
    """A server process exited or did not listen in time."""


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def raise_gc_thresholds(young: int | None = None, oldest: int | None = None) -> tuple[int, int, int]:
    """Raise this process's young and oldest collection thresholds to at least these (``None``
    leaves one as it is; neither is lowered); the thresholds now."""
    current = gc.get_threshold()
    gc.set_threshold(max(current[0], young or 0), current[1], max(current[2], oldest or 0))
    return gc.get_threshold()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _child_setup() -> None:
    """Runs in the child before exec: die with the parent, full fd limit."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    with contextlib.suppress(ValueError, OSError):
        raise_fd_limit()


def spawn(
    argv: Sequence[str],
    *,
    stdout: int | None = subprocess.DEVNULL,
    python: str | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``python argv...`` from the repository root in a new process group.

    ``python``: another interpreter (a peer venv's); ``environ``: variables added to ours.
    Returns the process and the file collecting its stderr (for diagnostics).
    """
    env = dict(os.environ) | (environ or {})
    # the caller's PYTHONPATH first (it may point at another build of openenv_anyio), then ours
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH", ""), str(REPO_ROOT)]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    fd, name = tempfile.mkstemp(prefix="bench-", suffix=".stderr")
    try:
        proc = subprocess.Popen(
            [python or sys.executable, *argv],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=fd,
            start_new_session=True,
            preexec_fn=_child_setup,
        )
    finally:
        os.close(fd)
    return proc, Path(name)


def kill_group(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop ``proc`` and everything in its process group; SIGKILL after ``grace_s``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group, if any
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)


def proc_status(pid: int) -> dict[str, int]:
    """Numeric fields of ``/proc/PID/status`` (VmRSS, VmHWM in kB; Threads)."""
    values: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                values[key] = int(parts[0])
    return values


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


def tree_status(pid: int) -> dict[str, int]:
    """``proc_status`` summed over ``pid`` and all its descendants (multi-process servers)."""
    total: dict[str, int] = {}
    pending = [pid]
    while pending:
        current = pending.pop()
        for key, value in proc_status(current).items():
            total[key] = total.get(key, 0) + value
        pending += _children(current)
    return total


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, every thread) used so far by ``pid`` and its live descendants."""
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{current}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / _TICKS_PER_S
        pending += _children(current)
    return total


def server_metric(base_url: str, name: str, **labels: str) -> float:
    """The value of sample ``name`` with ``labels`` on the server's ``/metrics`` (every
    worker's, under ``--workers``)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(base_url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(key) == value for key, value in labels.items()):
                return sample.value
    raise RuntimeError(f"the server's /metrics has no {name}")


def wait_healthy(server: ServerProcess, workers: int, timeout_s: float = 60.0) -> None:
    """Until ``GET /health`` answers 200 ``workers`` times in a row (a multi-process server
    binds its port before its workers serve; each answer may come from another worker)."""
    import http.client

    deadline = time.monotonic() + timeout_s
    streak = 0
    while streak < 4 * workers:
        if time.monotonic() > deadline:
            raise ServerStartError(f"{server.name} not healthy within {timeout_s:.0f} s")
        connection = http.client.HTTPConnection(HOST, server.port, timeout=5)
        try:
            connection.request("GET", "/health")
            streak = streak + 1 if connection.getresponse().status == 200 else 0
        except OSError:
            streak = 0
            time.sleep(0.1)
        finally:
            connection.close()


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


@dataclass
class ServerProcess:
    """A running server: its base URL, pid, and how to stop it."""

    name: str
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    stderr_path: Path
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_kb(self) -> int:
        return proc_status(self.pid).get("VmRSS", 0)

    def status(self) -> dict[str, int]:
        return proc_status(self.pid)

    def stderr_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def alive(self) -> bool:
        """Still running and still accepting connections."""
        return self.proc.poll() is None and _listening(self.port)

    def last_error_line(self) -> str:
        """The exception it died of: the last ``SomeError: ...`` line of its stderr."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)  # let a dying server finish writing its traceback
        lines = [line.strip(" |+-") for line in self.stderr_tail(60).splitlines()]
        errors = [line for line in lines if _EXCEPTION_LINE.match(line)]
        if errors:
            return errors[-1]
        lines = [line for line in lines if line]
        return lines[-1] if lines else f"exit code {self.proc.poll()}"

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> ServerProcess:
        """Block until the server accepts TCP connections; stop it and raise if it cannot."""
        deadline = time.monotonic() + timeout_s
        try:
            while not _listening(self.port):
                if self.proc.poll() is not None:
                    raise ServerStartError(f"{self.name} exited with {self.proc.returncode}:\n{self.stderr_tail()}")
                if time.monotonic() > deadline:
                    raise ServerStartError(f"{self.name} did not listen within {timeout_s:.0f} s")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        kill_group(self.proc)
        with contextlib.suppress(OSError):
            self.stderr_path.unlink()


def start_server(
    name: str,
    argv: Sequence[str],
    *,
    wait: bool = True,
    pythonpath: str | None = None,
    python: str | None = None,
    environ: dict[str, str] | None = None,
) -> ServerProcess:
    """Run ``python -m bench.serve ...argv --port P``; with ``wait``, until it accepts connections.

    ``wait=False`` returns at once (start several servers together, then ``wait_ready`` each).
    ``pythonpath``: a directory put first on the server's ``sys.path``, ahead of the working
    directory that ``-m`` would put first (another checkout of ``openenv_anyio``).
    ``python`` and ``environ``: as for ``spawn``.
    """
    port = free_port()
    argv = [*argv, "--port", str(port)]
    if pythonpath:
        launch = [
            "-c",
            f"import runpy, sys; sys.path.insert(0, {pythonpath!r}); sys.argv[1:] = {argv!r}; "
            "runpy.run_module('bench.serve', run_name='__main__')",
        ]
    else:
        launch = ["-m", "bench.serve", *argv]
    proc, stderr_path = spawn(launch, python=python, environ=environ)
    server = ServerProcess(name, f"http://{HOST}:{port}", port, proc, stderr_path)
    if wait:
        server.wait_ready()
    return server


@contextlib.contextmanager
def running_server(name: str, argv: Sequence[str]) -> Iterator[ServerProcess]:
    """``start_server`` as a context manager that always stops the server."""
    server = start_server(name, argv)
    try:
        yield server
    finally:
        server.stop()
