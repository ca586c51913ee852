"""A real ``redis-server`` (Debian's, ``tools/test-deps/apt.txt``) on a free loopback port,
with its files in a temporary folder, for the session-store tests."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.deploy.proxies import free_port

__all__ = ["RedisServer", "free_port", "redis_server"]

START_TIMEOUT_S = 20.0


def _answers_ping(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def url(self, database: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    """``redis-server`` on loopback, keeping nothing on disk, stopped afterwards."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    log = workdir / "redis.log"
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir)]
    argv += ["--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", str(log)]
    server = RedisServer(port, subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT), log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers_ping(port):
            if server.process.poll() is not None:
                raise RuntimeError(f"redis-server exited ({server.process.returncode}): {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"redis-server not answering on {port}")
            time.sleep(0.02)
        yield server
    finally:
        server.stop()
