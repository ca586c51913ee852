"""``openenv-anyio serve`` as a real subprocess: its URL, its stderr, real signals."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    """A running ``openenv-anyio serve``; stderr lines are collected by a reader thread."""

    def __init__(self, target: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openenv_anyio", "serve", target, "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.lines: list[str] = []
        self.stdout: list[str] = []
        self._url: str | None = None
        self._announced = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._out_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._out_reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout.append(line)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if self._url is None:
                found = re.search(r"serving on (http://\S+)", line) or re.search(r'"url": "(http://[^"]+)"', line)
                if found:
                    self._url = found.group(1)
                    self._announced.set()
        self._announced.set()

    @property
    def url(self) -> str:
        assert self._announced.wait(60), "the server did not announce its URL"
        assert self._url is not None, "".join(self.lines)
        return self._url

    @property
    def ws_url(self) -> str:
        return "ws" + self.url.removeprefix("http") + "/ws"

    def wait(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        self._out_reader.join(timeout=10)
        return code

    def json_events(self) -> list[dict[str, Any]]:
        """Every stderr line, each parsed as one JSON object (fails on a line that is not)."""
        return [json.loads(line) for line in self.lines if line.strip()]


@contextlib.contextmanager
def serve_process(target: str, *args: str) -> Iterator[ServeProcess]:
    served = ServeProcess(target, *args)
    try:
        yield served
    finally:
        if served.process.poll() is None:
            served.process.kill()
            served.process.wait()
