"""Servers shared by the throughput scenarios, started on first use and stopped at the end."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from bench.procs import ServerProcess, ServerStartError
from bench.stacks import StackUnavailable
from bench.stacks.raw import ECHO_SERVERS
from bench.stacks.registry import stack_module

Key = tuple[str, str]


def start_server(server: str, kind: str, *, wait: bool = True) -> ServerProcess:
    """A fresh server process: ``server`` is a stack name or a bare echo server."""
    if server in ECHO_SERVERS:
        return stack_module("raw").start_server(server, wait=wait)
    return stack_module(server).start_server(kind, wait=wait)


def _key(server: str, kind: str) -> Key:
    return (server, "" if server in ECHO_SERVERS else kind)


class ServerPool:
    """One running server per (server stack, env kind).

    A stack that cannot start is remembered and reported; a server found dead (crashed or no
    longer listening) is replaced by a fresh one, and the crash is kept in ``crashes``.
    """

    def __init__(self) -> None:
        self._servers: dict[Key, ServerProcess] = {}
        self._failed: dict[Key, str] = {}
        self.crashes: list[str] = []

    def prefetch(self, wanted: Iterable[Key]) -> None:
        """Start every missing server of ``wanted`` at once, then wait for each."""
        launched: dict[Key, ServerProcess] = {}
        for server, kind in wanted:
            key = _key(server, kind)
            if key in self._servers or key in self._failed or key in launched:
                continue
            try:
                launched[key] = start_server(server, kind, wait=False)
            except StackUnavailable as exc:
                self._failed[key] = str(exc)
        for key, process in launched.items():
            try:
                self._servers[key] = process.wait_ready()
            except ServerStartError as exc:
                self._failed[key] = f"{key[0]} server failed to start: {exc}"

    def url(self, server: str, kind: str) -> str:
        """The base URL of a live server for (``server``, ``kind``); StackUnavailable if none can run."""
        key = _key(server, kind)
        current = self._servers.get(key)
        if current is not None and not current.alive():
            self.crashes.append(f"{current.name} died: {current.last_error_line()}")
            current.stop()
            del self._servers[key]
        self.prefetch([(server, kind)])
        if key in self._failed:
            raise StackUnavailable(self._failed[key])
        return self._servers[key].url

    def process(self, server: str, kind: str) -> ServerProcess | None:
        return self._servers.get(_key(server, kind))

    def close(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            if server.proc.poll() is not None:
                self.crashes.append(f"{server.name} died: {server.last_error_line()}")
            server.stop()

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
