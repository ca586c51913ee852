"""A blocking face for ``EnvClient``: for plain scripts and for threads beside an event loop.

The client runs in an event loop of its own, in a thread started by
``anyio.from_thread.start_blocking_portal``; each blocking call is carried to it. So it
works from a script with no event loop and from a worker thread while another loop runs.
"""

from __future__ import annotations

import contextlib
import functools
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .errors import NotConnected
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

    def __repr__(self) -> str:
        return f"SyncEnvClient({self.client.url!r})"

    def connect(self) -> SyncEnvClient[_Client]:
        """Start the client's event-loop thread and open the connection (idempotent)."""
        if self._closed:
            raise NotConnected(f"{self!r} is closed")
        if self._portal is not None:
            return self
        stack = contextlib.ExitStack()
        try:
            portal = stack.enter_context(start_blocking_portal(self._backend))
            stack.enter_context(portal.wrap_async_context_manager(self.client))
        except BaseException:
            stack.close()
            raise
        self._stack, self._portal = stack, portal
        return self

    def close(self) -> None:
        """Close the session and stop the event-loop thread (idempotent)."""
        stack, self._stack, self._portal = self._stack, None, None
        self._closed = True
        if stack is not None:
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
