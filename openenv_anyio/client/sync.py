"""A blocking face for ``EnvClient``: for plain scripts and for threads beside an event loop.

The client runs in an event loop of its own, in a thread started by
``anyio.from_thread.start_blocking_portal``; each blocking call is carried to it. So it
works from a script with no event loop and from a worker thread while another loop runs.

A process forked while the client is open (``os.fork``, ``multiprocessing``) has neither
that thread nor a connection of its own: there, a call raises :class:`UsedAfterFork` at
once (it would wait forever for a thread that is not there), and :meth:`close` lets the
parent's connection be, so the child's exit never waits for it either.
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .errors import NotConnected, UsedAfterFork
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

    async def call_tool(self, name: str, /, **arguments: Any) -> Any: ...


# The client type a SyncEnvClient wraps (``SyncEnvClient[EnvClient]`` from ``EnvClient.sync()``).
# Its default (PEP 696) is for type checkers only: a bare ``SyncEnvClient`` annotation stays valid.
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    _Client = TypeVar("_Client", bound=AsyncSession, default=AsyncSession)
else:
    from typing import TypeVar

    _Client = TypeVar("_Client", bound=AsyncSession)


#: the clients whose event-loop thread runs now (a forked child lets theirs go)
_open: weakref.WeakSet[SyncEnvClient[Any]] = weakref.WeakSet()


def _forked_child() -> None:
    """In a child process just forked: the open clients' threads stayed in the parent."""
    for client in list(_open):
        client._left_in_parent()
    _open.clear()


os.register_at_fork(after_in_child=_forked_child)


class SyncEnvClient(Generic[_Client]):
    """Blocking ``reset`` / ``step`` / ``state`` / ``close`` on an :class:`EnvClient`.

    Use it as ``with EnvClient(url).sync() as env:``, or call :meth:`connect` and
    :meth:`close` yourself (the first request connects if needed). ``backend`` picks the
    event loop the client runs on in its thread (``"asyncio"`` or ``"trio"``).
    """

    def __init__(self, client: _Client, *, backend: str = "asyncio") -> None:
        self.client = client
        self._backend = backend
        self._stack: contextlib.ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._closed = False
        #: the process that opened the connection (a forked child has no part in it)
        self._opened_in: int | None = None

    def __repr__(self) -> str:
        return f"SyncEnvClient({self.client.url!r})"

    def connect(self) -> SyncEnvClient[_Client]:
        """Start the client's event-loop thread and open the connection (idempotent)."""
        if self._closed:
            raise NotConnected(f"{self!r} is closed")
        if self._portal is not None:
            self._check_process()
            return self
        stack = contextlib.ExitStack()
        try:
            portal = stack.enter_context(start_blocking_portal(self._backend))
            stack.enter_context(portal.wrap_async_context_manager(self.client))
        except BaseException:
            stack.close()
            raise
        self._stack, self._portal, self._opened_in = stack, portal, os.getpid()
        _open.add(self)
        return self

    def _left_in_parent(self) -> None:
        """After a fork, in the child: the portal's thread is not in this process. Marked as
        not running (anyio's ``BlockingPortal`` state), so whatever reaches it fails at once
        and the portal's own shutdown, when the client is collected or at exit, waits for
        nothing."""
        if self._portal is not None:
            self._portal._event_loop_thread_id = None

    def _check_process(self) -> None:
        """Raise :class:`UsedAfterFork` in a process forked after the connection was opened."""
        if self._opened_in is not None and self._opened_in != os.getpid():
            raise UsedAfterFork(
                f"{self!r} was opened in process {self._opened_in}, which this one was forked from: its "
                f"connection and event loop stayed there; create the client in this process"
            )

    def close(self) -> None:
        """Close the session and stop the event-loop thread (idempotent). In a forked child
        it only lets go: the connection is the parent's."""
        stack, self._stack, self._portal = self._stack, None, None
        self._closed = True
        _open.discard(self)
        if stack is not None and self._opened_in == os.getpid():
            stack.close()

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
        self._check_process()
        portal = self._portal or self.connect()._portal
        assert portal is not None
        return portal.call(func, *args)

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
