"""A blocking face for ``EnvClient``: for plain scripts and for threads beside an event loop.

The client runs in an event loop on a thread of its own, the one the process's blocking
clients of that backend share (``loop_thread``), kept open there by a host task
(``hosted``); each blocking call is carried to it and waited for. So it works from a script
with no event loop, from a worker thread while another loop runs, and from many threads at
once (each with its client, or all on one: a client's calls take turns). ``close()``, the
client's finalizer when it is dropped unclosed, or interpreter exit closes the session.

A process forked while the client is open (``os.fork``, ``multiprocessing``) has neither
that thread nor a connection of its own: there, a call raises :class:`UsedAfterFork` at
once (it would wait forever for a thread that is not there), and :meth:`close` lets the
parent's connection be, so the child's exit never waits for it either.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from .errors import NotConnected, UsedAfterFork
from .hosted import HostedClient
from .loop_thread import LoopLease
from .results import State, StepResult, Tool

__all__ = ["AsyncSession", "SyncEnvClient"]


class AsyncSession(Protocol):
    """What a :class:`SyncEnvClient` drives: an ``EnvClient`` (or a client with its methods)."""

    @property
    def url(self) -> str: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...

    async def reset(self, **kwargs: Any) -> StepResult: ...

    async def step(self, action: Any) -> StepResult: ...

    async def state(self) -> State: ...

    async def list_tools(self) -> list[Tool]: ...

    async def close(self) -> None: ...

    async def call_tool(self, name: str, /, **arguments: Any) -> Any: ...


# The client type a SyncEnvClient wraps (``SyncEnvClient[EnvClient]`` from ``EnvClient.sync()``).
# Its default (PEP 696) is for type checkers only: a bare ``SyncEnvClient`` annotation stays valid.
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    _Client = TypeVar("_Client", bound=AsyncSession, default=AsyncSession)
else:
    from typing import TypeVar

    _Client = TypeVar("_Client", bound=AsyncSession)


class SyncEnvClient(Generic[_Client]):
    """Blocking ``reset`` / ``step`` / ``state`` / ``close`` on an :class:`EnvClient`.

    Use it as ``with EnvClient(url).sync() as env:``, or call :meth:`connect` and
    :meth:`close` yourself (the first request connects if needed). ``backend`` picks the
    event loop the client runs on in its thread (``"asyncio"`` or ``"trio"``).
    """

    def __init__(self, client: _Client, *, backend: str = "asyncio") -> None:
        self.client = client
        self._backend = backend
        self._lease: LoopLease | None = None
        self._hosted: HostedClient[_Client] | None = None
        self._connecting = threading.Lock()  # this client's, for threads that connect it at once
        self._closed = False
        #: the process that opened the connection (a forked child has no part in it)
        self._opened_in: int | None = None

    def __repr__(self) -> str:
        return f"SyncEnvClient({self.client.url!r})"

    def connect(self) -> SyncEnvClient[_Client]:
        """Open the connection on the shared event-loop thread (idempotent)."""
        with self._connecting:
            if self._closed:
                raise NotConnected(f"{self!r} is closed")
            if self._hosted is not None:
                self._check_process()
                return self
            lease = LoopLease(self._backend)
            try:
                hosted: HostedClient[_Client] = lease.loop.call(HostedClient.open, self.client)
            except BaseException:
                lease.release()
                raise
            lease.resident = hosted
            # a client dropped without close() still closes its session and lets go of the loop
            weakref.finalize(self, lease.release)
            self._lease, self._hosted, self._opened_in = lease, hosted, os.getpid()
        return self

    def _check_process(self) -> None:
        """Raise :class:`UsedAfterFork` in a process forked after the connection was opened."""
        if self._opened_in is not None and self._opened_in != os.getpid():
            raise UsedAfterFork(
                f"{self!r} was opened in process {self._opened_in}, which this one was forked from: its "
                f"connection and event loop stayed there; create the client in this process"
            )

    def close(self) -> None:
        """Close the session and let go of the event-loop thread (idempotent). In a forked
        child it only lets go: the connection is the parent's."""
        lease, self._lease, self._hosted = self._lease, None, None
        self._closed = True
        if lease is not None and self._opened_in == os.getpid():
            lease.release()  # closes the session first

    def __enter__(self) -> SyncEnvClient[_Client]:
        return self.connect()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, func: Any, *args: Any) -> Any:
        if self._closed:
            raise NotConnected(f"{self!r} is closed")
        lease = self._lease or self.connect()._lease
        self._check_process()
        assert lease is not None
        return lease.loop.call(func, *args)

    def reset(self, **kwargs: Any) -> StepResult:
        """Blocking :meth:`EnvClient.reset`."""
        result: StepResult = self._call(functools.partial(self.client.reset, **kwargs))
        return result

    def step(self, action: Any) -> StepResult:
        """Blocking :meth:`EnvClient.step`."""
        result: StepResult = self._call(self.client.step, action)
        return result

    def state(self) -> State:
        """Blocking :meth:`EnvClient.state`."""
        state: State = self._call(self.client.state)
        return state

    def list_tools(self) -> list[Tool]:
        """Blocking :meth:`EnvClient.list_tools`."""
        tools: list[Tool] = self._call(self.client.list_tools)
        return tools

    def call_tool(self, name: str, /, **arguments: Any) -> Any:
        """Blocking :meth:`EnvClient.call_tool`."""
        return self._call(functools.partial(self.client.call_tool, name, **arguments))
