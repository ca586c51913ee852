"""``openenv-anyio serve`` as a real process for tests: started on a free port, its URL (and
worker pids) read from what it prints (or, with ``--log-format json``, from its
``server_started`` event), stopped with SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0


def serve_environment() -> dict[str, str]:
    """The test's environment, with the repository (and its tests) importable."""
    paths = [str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@dataclass
class ServeProcess:
    """A running ``openenv-anyio serve``."""

    process: subprocess.Popen[str]
    url: str = ""
    pids: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    #: standard output, when captured (``serve_process(..., capture_stdout=True)``)
    stdout: list[str] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def ws_url(self) -> str:
        return "ws" + self.url.removeprefix("http") + "/ws"

    def json_events(self) -> list[dict[str, Any]]:
        """Every standard error line parsed as one JSON object (``--log-format json``; a line
        that is not JSON fails the test)."""
        return [json.loads(line) for line in self.lines if line.strip()]

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout.append(line)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # end of output
            self._changed.notify_all()

    def wait_for_line(self, pattern: str, *, timeout_s: float = START_TIMEOUT_S, start: int = 0) -> re.Match[str]:
        """The first line from ``start`` on matching ``pattern`` (waits for it)."""
        deadline = time.monotonic() + timeout_s
        regex = re.compile(pattern)
        index = start
        with self._changed:
            while True:
                while index < len(self.lines):
                    if self.lines[index] == "" and self.process.poll() is not None:
                        raise RuntimeError(f"server exited ({self.process.returncode}): {''.join(self.lines)[-2000:]}")
                    match = regex.search(self.lines[index])
                    index += 1
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no line matching {pattern!r}: {''.join(self.lines)[-2000:]}")
                self._changed.wait(left)

    def stop(self, signum: int = signal.SIGTERM, *, timeout_s: float = 60.0) -> int:
        """Send ``signum`` and wait for the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


@contextlib.contextmanager
def serve_process(
    target: str,
    *args: str,
    host: str = "127.0.0.1",
    capture_stdout: bool = False,
    preexec_fn: Callable[[], None] | None = None,
) -> Iterator[ServeProcess]:
    """Run ``openenv-anyio serve TARGET --port 0 ARGS...`` until the block ends
    (``preexec_fn``: runs in the child before it starts, e.g. to lower a resource limit)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "openenv_anyio", "serve", target, "--host", host, "--port", "0", *args],
        stdout=subprocess.PIPE if capture_stdout else None,
        stderr=subprocess.PIPE,
        text=True,
        env=serve_environment(),
        preexec_fn=preexec_fn,
    )
    served = ServeProcess(process)
    readers = [threading.Thread(target=served._read, name="serve-stderr", daemon=True)]
    if capture_stdout:
        readers.append(threading.Thread(target=served._read_stdout, name="serve-stdout", daemon=True))
    for reader in readers:
        reader.start()
    try:
        match = served.wait_for_line(
            r"serving on (http://\S+)(?: \(.*?\))?(?:, \d+ workers \(pids ([\d ]+)\))?"
            r'|"url": "(http://[^"]+)".*"event": "server_started"'
        )
        served.url = match.group(1) or match.group(3)
        served.pids = [int(pid) for pid in (match.group(2) or "").split()]
        yield served
    finally:
        if process.poll() is None:
            served.stop()
        for reader in readers:
            reader.join(10)
