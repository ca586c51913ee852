"""Keep one connection's trouble inside that connection (guards around Hypercorn's trio TCP
server).

1. The close race. When both ends close a WebSocket at the same moment, Hypercorn may
   half-close the socket (``send_eof``, outside its send lock) while its reader task answers
   the peer's close frame (``send_all``); trio raises ``BusyResourceError`` in the reader.
   It happens to sessions closed by the openenv-core client.
   The guard treats it as what it is, the connection closing, and drops those bytes.
2. A peer that stops reading. Hypercorn shields every socket write from cancellation, so a
   write to a peer whose TCP window stays shut waits forever, uncancellable: the session (or
   ``/ws/ui`` subscriber) never ends and server shutdown hangs. With a send timeout set on
   the Hypercorn config (:data:`SEND_TIMEOUT_ATTR`), a write that makes no progress for that
   long aborts the connection (still shielded from outside cancellation, so a frame is never
   cut by anything else).
3. Anything else a connection task raises would escape into the listener's nursery and stop
   the server for everyone; the guard logs it and ends that connection only.

:data:`PATCHES` applies them to the connections of our servers only (a config that carries
:data:`~.events.SEND_TIMEOUT_ATTR`); other servers' connections run Hypercorn's own code.
It also records each connection's ``TCPServer`` in a context variable of its task
(:func:`current_connection`), for code that runs in that task (``direct_ws``).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
from typing import Any

import trio
from hypercorn.events import RawData
from hypercorn.trio.tcp_server import TCPServer

from .events import SEND_TIMEOUT_ATTR
from .inventory import Patch

__all__ = ["PATCHES", "current_connection", "socket_write_now", "write_guarded", "write_now"]

log = logging.getLogger("openenv_anyio.server")

_CHUNK = 256 * 1024
_CONNECTION: contextvars.ContextVar[TCPServer | None] = contextvars.ContextVar("openenv_connection", default=None)


def current_connection() -> TCPServer | None:
    """The Hypercorn connection whose task (or a child of it) is running, if any."""
    return _CONNECTION.get()


def _only_exceptions(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_only_exceptions(inner) for inner in error.exceptions)
    return isinstance(error, Exception)


async def _send_with_progress_timeout(stream: trio.abc.SendStream, data: bytes, timeout: float) -> bool:
    """Write ``data``; ``False`` when a chunk made no progress within ``timeout``."""
    view = memoryview(data)
    for start in range(0, len(view), _CHUNK):
        with trio.move_on_after(timeout) as progress:
            await stream.send_all(view[start : start + _CHUNK])
        if progress.cancelled_caught:
            return False
    return True


def write_now(server: TCPServer, data: bytes) -> int:
    """How many bytes of ``data`` the connection's socket took at once, without waiting:
    0 while another task holds the send lock, or when the socket is full or broken (the
    guarded path then decides). The cheap way out for a small frame, the usual case."""
    return socket_write_now(server.stream.socket, server.send_lock, data)


def socket_write_now(sock: trio.socket.SocketType, lock: trio.Lock, data: bytes) -> int:
    """:func:`write_now` on any socket whose guarded writes hold ``lock``."""
    if lock.locked():
        return 0
    fd = sock.fileno()
    if fd < 0:
        return 0
    try:
        return os.write(fd, data)
    except OSError:
        return 0


async def write_guarded(stream: trio.abc.SendStream, lock: trio.Lock, data: bytes, timeout: float | None) -> bool:
    """Write ``data`` holding ``lock``, shielded from cancellation (a frame is never cut);
    with a ``timeout``, a write that makes no progress for that long closes ``stream``.
    ``False`` when it did (the peer stopped reading); a connection already closing drops
    the bytes."""
    async with lock:
        with trio.CancelScope(shield=True):
            try:
                if timeout is None:
                    await stream.send_all(data)
                elif not await _send_with_progress_timeout(stream, data, timeout):
                    log.info("peer took no data for %g s; dropping the connection", timeout)
                    await stream.aclose()
                    return False
            except (trio.BusyResourceError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
    return True


def _guarded_send(original_send: Any) -> Any:
    @functools.wraps(original_send)
    async def protocol_send(self: TCPServer, event: Any) -> None:
        if not hasattr(self.config, SEND_TIMEOUT_ATTR):  # another server's connection
            await original_send(self, event)
            return
        timeout: float | None = getattr(self.config, SEND_TIMEOUT_ATTR)
        if timeout is None or not isinstance(event, RawData):
            try:
                await original_send(self, event)
            except trio.BusyResourceError:  # the other task is half-closing this socket
                pass
            return
        data = event.data
        written = write_now(self, data)
        if written == len(data):
            return
        await write_guarded(self.stream, self.send_lock, data[written:], timeout)
        # No ``protocol.handle(Closed())`` here (Hypercorn's own path does it): this runs in the
        # application's send, and Closed queues a disconnect for the application, which waits
        # forever when its queue is full. The reader task sees the closed socket and reports it
        # once the application has drained its queue.

    return protocol_send


def _guarded_run(original_run: Any) -> Any:
    @functools.wraps(original_run)
    async def run(self: TCPServer) -> None:
        if not hasattr(self.config, SEND_TIMEOUT_ATTR):  # another server's connection
            await original_run(self)
            return
        _CONNECTION.set(self)  # this task's own context: seen by it and the tasks it starts
        try:
            await original_run(self)
        except BaseException as error:
            if not _only_exceptions(error):
                raise  # cancellation, KeyboardInterrupt: not ours to swallow
            log.exception("connection failed; the server carries on")

    return run


PATCHES = (
    Patch(
        "hypercorn.trio.tcp_server:TCPServer.protocol_send",
        _guarded_send,
        "socket writes that give up on a peer that stopped reading, and survive the close race",
    ),
    Patch(
        "hypercorn.trio.tcp_server:TCPServer.run",
        _guarded_run,
        "one connection's failure ends that connection only; records the connection for direct_ws",
    ),
)
