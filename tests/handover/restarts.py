"""``openenv-anyio serve`` restarted on the same port as a real process: stopped with
SIGTERM (it hands its sessions over) or SIGKILL (a crash), then started again on the same
session store."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from serve_process import ServeProcess, serve_process
from session_store.redis_server import free_port


class RestartedServer:
    """One server at a time on a fixed port; :meth:`restart` replaces it (blocking: call it
    from a worker thread while clients run)."""

    def __init__(self, target: str, *args: str) -> None:
        self.target = target
        self.args = args
        self.port = free_port()
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
