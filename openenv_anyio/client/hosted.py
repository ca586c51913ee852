"""An :class:`~openenv_anyio.client.EnvClient` kept open by a task of its own.

Blocking clients and upstream's clients connect in whatever task makes the first call, and
close in whatever task calls ``close()``. Our client is an async context manager whose task
group must be entered and left by one task, with other cancel scopes properly nested around
it. So neither the blocking face (``sync``) nor a compat client enters it in the caller's
task: :meth:`HostedClient.open` starts a host task on the running loop (an asyncio task, or a
trio system task) that enters the client and waits; requests are then made from any task of
that loop (the client serialises them), and :meth:`HostedClient.close` closes the session and
lets the host task leave the context.

The host task is owned by the client that opened it and always joined by
:meth:`close`. When its event loop ends first (``asyncio.run`` returned, a trio run
finished, the client never closed), the loop cancels it with the connection's own tasks, as
it would a native client's: the connection is dropped without the ``close`` frame (a server
keeping sessions for resuming frees it after its grace period) and :attr:`alive` turns
False. The blocking clients' loop thread closes its sessions before stopping instead
(``loop_thread``).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

import anyio
import trio

from .errors import NotConnected
from .loop_thread import LoopThread


class Session(Protocol):
    """What a host task keeps open: an ``EnvClient`` (entered, closed, left)."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...

    async def close(self) -> None: ...


_S = TypeVar("_S", bound=Session)

__all__ = ["HostedClient", "loop_running", "running_loop_backend"]


def running_loop_backend() -> str | None:
    """``"trio"`` or ``"asyncio"`` when the calling task runs on that event loop, else None.

    Trio first: a trio run hosted on an asyncio loop (guest mode) also has a running asyncio loop.
    """
    if trio.lowlevel.in_trio_task():
        return "trio"
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return "asyncio"


def loop_running() -> bool:
    """Whether the calling thread runs an event loop (asyncio checked first: the cheaper test)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return trio.lowlevel.in_trio_task()
    return True


class HostedClient(Generic[_S]):
    """A native client opened by, and kept open in, a host task on the current loop."""

    def __init__(self, client: _S) -> None:
        self.client = client
        self._opened = anyio.Event()
        self._release = anyio.Event()
        self._finished = anyio.Event()
        self._failure: BaseException | None = None
        self._backend: str | None = None
        self._task: asyncio.Task[None] | None = None  # asyncio keeps only weak references to tasks
        #: whether the host task still holds the client open
        self.alive = True

    @property
    def on_running_loop(self) -> bool:
        """Whether the host task lives on the loop of the caller (and still runs)."""
        return self.alive and running_loop_backend() == self._backend

    @classmethod
    async def open(cls, client: _S) -> HostedClient[_S]:
        """Start the host task, wait until the client is open; its connect error is raised here."""
        hosted = cls(client)
        hosted._backend = running_loop_backend()
        match hosted._backend:
            case "asyncio":
                hosted._task = asyncio.get_running_loop().create_task(hosted._host(), name=f"{client!r} host")
            case "trio":
                trio.lowlevel.spawn_system_task(hosted._host, name=f"{client!r} host")
            case _:
                raise RuntimeError("HostedClient.open runs on an asyncio or trio event loop")
        try:
            await hosted._opened.wait()
        except BaseException:
            hosted._release.set()  # cancelled while connecting: the host task gives up
            raise
        if hosted._failure is not None:
            raise hosted._failure
        if not hosted.alive:
            raise NotConnected(f"{client!r} could not be opened: its event loop is ending")
        return hosted

    async def _host(self) -> None:
        loop_thread = LoopThread.current()
        if loop_thread is not None:
            loop_thread.hold(self)  # closed before that loop stops, while the reader still runs
        try:
            async with self.client:
                self._opened.set()
                await self._release.wait()
        except Exception as exc:  # the connect error goes to open(); nothing else escapes
            if not self._opened.is_set():
                self._failure = exc
        finally:
            if loop_thread is not None:
                loop_thread.let_go(self)
            self.alive = False
            self._finished.set()
            self._opened.set()

    async def close(self) -> None:
        """Close the session (WS-CLOSE-1) and wait for the host task to end."""
        with anyio.CancelScope(shield=True):
            if self.on_running_loop:
                await self.client.close()
            self._release.set()
            if self.on_running_loop:
                await self._finished.wait()
