"""Servers shared by the throughput scenarios, started on first use and stopped at the end."""

from __future__ import annotations

from types import TracebackType

from bench.procs import ServerProcess
from bench.stacks import StackUnavailable
from bench.stacks.raw import ECHO_SERVERS
from bench.stacks.registry import stack_module


def start_server(server: str, kind: str) -> ServerProcess:
    """A fresh server process: ``server`` is a stack name or a bare echo server."""
    if server in ECHO_SERVERS:
        return stack_module("raw").start_server(server)
    return stack_module(server).start_server(kind)


class ServerPool:
    """One running server per (server stack, env kind); a stack that fails to start is remembered."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, str], ServerProcess] = {}
        self._failed: dict[tuple[str, str], str] = {}

    def url(self, server: str, kind: str) -> str:
        key = (server, kind if server not in ECHO_SERVERS else "")
        if key in self._failed:
            raise StackUnavailable(self._failed[key])
        if key not in self._servers:
            try:
                self._servers[key] = start_server(server, kind)
            except StackUnavailable as exc:
                self._failed[key] = str(exc)
                raise
            except RuntimeError as exc:  # ServerStartError: report, do not retry
                self._failed[key] = f"{server} server failed to start: {exc}"
                raise StackUnavailable(self._failed[key]) from exc
        return self._servers[key].url

    def close(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
