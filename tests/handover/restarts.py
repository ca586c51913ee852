"""``openenv-anyio serve`` restarted on the same port as a real process: stopped with
SIGTERM (it hands its sessions over) or SIGKILL (a crash), then started again on the same
session store."""

from __future__ import annotations

import contextlib
import random
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

from serve_process import ServeProcess, serve_process


def steady_port() -> int:
    """A free loopback port below the kernel's ephemeral range: no outgoing connection of
    another process takes it as its own port while the server restarts."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10_000, max(low, 10_001))
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


class RestartedServer:
    """One server at a time on a fixed port; :meth:`restart` replaces it (blocking: call it
    from a worker thread while clients run)."""

    def __init__(self, target: str, *args: str) -> None:
        self.target = target
        self.args = args
        self.port = steady_port()
        self.restarts = 0
        self._stack = contextlib.ExitStack()
        self.current: ServeProcess | None = None
        self.stopped: list[ServeProcess] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServeProcess:
        self.current = self._stack.enter_context(
            serve_process(self.target, "--port", str(self.port), "--ping-interval", "0", *self.args)
        )
        assert self.current.port == self.port
        return self.current

    def restart(self, signum: int = signal.SIGTERM) -> int:
        """Stop the running server with ``signum``, start a new one; the old one's exit status."""
        assert self.current is not None
        status = self.current.stop(signum)
        self.stopped.append(self.current)
        self.restarts += 1
        self.start()
        return status

    def close(self) -> None:
        self._stack.close()


@contextlib.contextmanager
def restarted_server(target: str, *args: str) -> Iterator[RestartedServer]:
    server = RestartedServer(target, *args)
    try:
        server.start()
        yield server
    finally:
        server.close()
