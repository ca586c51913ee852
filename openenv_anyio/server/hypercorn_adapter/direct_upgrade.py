"""``/ws`` sessions served from their connection's first bytes, Hypercorn never involved.

Hypercorn builds for every connection, before its application sees the request, a task
group, an idle timer, its HTTP/1.1 protocol object with an h11 parser, a WebSocket stream
and wsproto's handshake (a second parse of the head), and sends the ``101`` through h11:
most of a session's fixed server CPU when thousands connect together. A connection whose
first bytes are a whole, well-formed WebSocket upgrade request
(:func:`~openenv_anyio.server.request_head.read_upgrade`, peeked at accept) to a route the
application serves directly (its ``direct_websocket(scope)``, as for :mod:`.direct_ws`) is
served here instead: the scope is built as Hypercorn builds it, the application's handler
runs in the connection's task on a :class:`~.direct_io.DirectIO`, and this module answers
the handshake itself:

- ``websocket.accept``: the ``101`` (the accept token, the chosen subprotocol, the
  application's headers and Hypercorn's ``date``/``server``), logged as Hypercorn logs it;
  permessage-deflate is declined, as on :mod:`.direct_ws`;
- ``websocket.http.response.start``/``body``: that response, then the connection closes;
- ``websocket.close`` before the accept: ``403``; the application returning before either:
  ``500``; bytes before the accept: ``400`` (as Hypercorn answers each).

Writes the socket does not take at once wait for the connection's lock and give up on a
peer that takes nothing for the send timeout (as :mod:`.connection_guards` does for
Hypercorn's connections); a failure of the connection is logged and ends it alone.

Anything else reaches Hypercorn untouched (nothing was read): other requests and routes,
heads not yet whole at accept (a client that sends its request in pieces), what only an
HTTP/1.1 parser should judge (a body, folded lines), servers with ``server_names``. The
handshake answered here is the same as Hypercorn's (``tests/server/test_direct_upgrade.py``
sends every handshake both ways). What it saves is measured by ``python -m
bench.connection_cpu`` (bench/README.md, "Server CPU per connection").
"""

from __future__ import annotations

import collections
import enum
import functools
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import unquote

import trio
from hypercorn.trio.tcp_server import TCPServer

from ...core import CloseCode
from ...ws import generate_accept_token
from ..request_head import Upgrade, discard_now, peek_now, read_upgrade
from .connection_guards import socket_write_now, write_guarded
from .direct_io import DirectIO
from .events import INFLIGHT_BUDGET_ATTR, SEND_TIMEOUT_ATTR, DirectHandler
from .handshake_queue import handshake_answered, peer_gone
from .reason_phrases import phrase

__all__ = ["ANSWER_TRANSITIONS", "Answer", "direct_upgrades"]

log = logging.getLogger("openenv_anyio.server")

Handler = Callable[[Any], Awaitable[Any]]


def direct_upgrades(handler: Handler) -> Handler:
    """Hypercorn's connection handler of ``trio.serve_listeners`` (``TCPServer`` with its
    app, config, context and state bound) with the upgrades of direct routes served here
    (see the module doc); any other handler as it is."""
    if not (isinstance(handler, functools.partial) and handler.func is TCPServer and len(handler.args) >= 4):
        return handler
    app, config, _, state = handler.args[:4]
    choose = getattr(getattr(app, "app", None), "direct_websocket", None)  # inside Hypercorn's ASGIWrapper
    if choose is None or config.server_names or not hasattr(config, SEND_TIMEOUT_ATTR):
        return handler

    async def serve(stream: Any) -> None:
        if isinstance(stream, trio.SocketStream):
            data = peek_now(stream.socket)
            upgrade = read_upgrade(data) if data else None
            if upgrade is not None:
                scope = _scope(upgrade, stream.socket, config, state)
                direct = choose(scope)
                if direct is not None:
                    await _serve(stream, upgrade, scope, direct, config)
                    return
        await handler(stream)

    return serve


def _scope(upgrade: Upgrade, sock: trio.socket.SocketType, config: Any, state: Any) -> dict[str, Any]:
    """The ASGI scope Hypercorn builds for the same request."""
    return {
        "type": "websocket",
        "asgi": {"spec_version": "2.3", "version": "3.0"},
        "scheme": "ws",
        "http_version": "1.1",
        "path": unquote(upgrade.raw_path.decode("ascii", "replace")),
        "raw_path": upgrade.raw_path,
        "query_string": upgrade.query_string,
        "root_path": config.root_path,
        "headers": upgrade.headers,
        "client": _address(sock, sock.getpeername),
        "server": _address(sock, sock.getsockname),
        "state": state.copy(),
        "subprotocols": upgrade.subprotocols,
        "extensions": {"websocket.http.response": {}},
    }


def _address(sock: trio.socket.SocketType, read: Callable[[], Any]) -> tuple[str, int] | None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    try:
        address = read()
    except OSError:
        return None
    return (address[0], address[1])


async def _serve(
    stream: trio.SocketStream, upgrade: Upgrade, scope: dict[str, Any], handler: DirectHandler, config: Any
) -> None:
    """Run ``handler`` on the connection; close it after, whatever happened."""
    sock = stream.socket
    try:
        if peer_gone(sock):  # its client gave up waiting: no session for nobody
            return
        inbox: collections.deque[Any] = collections.deque([{"type": "websocket.connect"}])
        link = _UpgradeLink(stream, upgrade, scope, config, inbox)
        io = DirectIO(
            link,
            inbox,
            max_message_size=config.websocket_max_message_size,
            budget=getattr(config, INFLIGHT_BUDGET_ATTR, None),
        )
        try:
            await handler(scope, io.receive, io.send)
        except Exception:
            log.exception("WebSocket connection failed; the server carries on")
        finally:
            io.release_held()
            with trio.CancelScope(shield=True):
                try:
                    await io.send(None)  # as Hypercorn does when an application returns
                except Exception:
                    log.exception("WebSocket connection failed while closing")
    finally:
        handshake_answered()  # given up once (when answered, or now)
        discard_now(sock)  # closing with unread bytes would reset the connection
        await trio.aclose_forcefully(stream)


class Answer(enum.Enum):
    """How far a taken-over connection's handshake has been answered; the only transitions
    are :data:`ANSWER_TRANSITIONS`.

    - ``PENDING``: nothing sent yet;
    - ``RESPONSE``: an HTTP response's head is out (the application's ``http.response``, or
      a refusal: 403, 500, 400), its body may follow;
    - ``OPEN``: the ``101`` is out, the WebSocket is the session's;
    - ``CLOSED``: the response is out whole, or the application sent its close (the
      disconnect it sees later is a normal one).
    """

    PENDING = "pending"
    RESPONSE = "response"
    OPEN = "open"
    CLOSED = "closed"


ANSWER_TRANSITIONS: Final[dict[Answer, frozenset[Answer]]] = {
    Answer.PENDING: frozenset({Answer.RESPONSE, Answer.OPEN}),
    Answer.RESPONSE: frozenset({Answer.CLOSED}),
    Answer.OPEN: frozenset({Answer.CLOSED}),
    Answer.CLOSED: frozenset(),
}


class _UpgradeLink:
    """A :class:`~.direct_io.Link` on a connection this module took over."""

    __slots__ = (
        "_stream",
        "_upgrade",
        "_scope",
        "_config",
        "_inbox",
        "_lock",
        "_started",
        "_state",
        "_status",
        "ended",
    )

    def __init__(
        self,
        stream: trio.SocketStream,
        upgrade: Upgrade,
        scope: dict[str, Any],
        config: Any,
        inbox: collections.deque[Any],
    ) -> None:
        self._stream = stream
        self._upgrade = upgrade
        self._scope = scope
        self._config = config
        self._inbox = inbox
        self._lock = trio.Lock()  # held by a write that waits for room
        self._started = time.time()
        self._state = Answer.PENDING
        self._status = 0
        self.ended = False

    @property
    def socket(self) -> trio.socket.SocketType:
        return self._stream.socket

    def leftover(self) -> bytes:
        return b""  # the head was read to its end; what follows is still in the socket

    def write_now(self, data: bytes) -> int:
        return socket_write_now(self._stream.socket, self._lock, data)

    async def write_rest(self, data: bytes) -> None:
        if not await write_guarded(self._stream, self._lock, data, getattr(self._config, SEND_TIMEOUT_ATTR)):
            self._end_stream()

    async def _write(self, data: bytes) -> None:
        written = self.write_now(data)
        if written < len(data):
            await self.write_rest(data[written:])

    def _to(self, state: Answer) -> None:
        if state is not self._state:
            assert state in ANSWER_TRANSITIONS[self._state], f"{self._state} -> {state}"
            self._state = state

    async def handshake(self, message: dict[str, Any] | None) -> bool:
        kind = None if message is None else message["type"]
        if self._state is Answer.PENDING:
            self._take_head()
            handshake_answered()  # the next handshake may start: this one is answered now
        match kind, self._state:
            case "websocket.accept", Answer.PENDING:
                assert message is not None
                await self._accept(message)
                return True
            case "websocket.http.response.start", Answer.PENDING:
                assert message is not None
                self._to(Answer.RESPONSE)
                self._status = int(message["status"])
                headers = [(bytes(name).lower(), bytes(value)) for name, value in message.get("headers", ())]
                if not any(name == b"connection" for name, _ in headers):
                    headers.append((b"connection", b"close"))  # the connection ends with the response
                await self._write(self._head(self._status, headers))
            case "websocket.http.response.body", Answer.RESPONSE:
                assert message is not None
                await self._write(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    await self._answered(self._status)
            case "websocket.close", Answer.PENDING:
                await self._refuse(HTTPStatus.FORBIDDEN)
            case None, Answer.PENDING:
                await self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR)
            case None, _:
                pass
            case _:
                raise RuntimeError(f"unexpected ASGI message {kind!r} in the WebSocket handshake")
        return False

    def _take_head(self) -> None:
        """Read the head the handshake answers out of the socket (it is there: it was peeked)."""
        fd = self._stream.socket.fileno()
        left = self._upgrade.size
        while left:
            try:
                read = len(os.read(fd, left))
            except OSError:
                return
            if not read:
                return
            left -= read

    def _head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        lines = [b"HTTP/1.1 %d %s" % (status, phrase(status))]
        lines += [name + b": " + value for name, value in [*headers, *self._config.response_headers("h11")]]
        return b"\r\n".join(lines) + b"\r\n\r\n"

    async def _accept(self, message: dict[str, Any]) -> None:
        headers = [
            (b"upgrade", b"WebSocket"),
            (b"connection", b"Upgrade"),
            (b"sec-websocket-accept", generate_accept_token(self._upgrade.key)),
        ]
        subprotocol = message.get("subprotocol")
        if subprotocol is not None:
            headers.append((b"sec-websocket-protocol", subprotocol.encode("latin-1")))
        headers += [(bytes(name).lower(), bytes(value)) for name, value in message.get("headers", ())]
        self._to(Answer.OPEN)
        await self._write(self._head(HTTPStatus.SWITCHING_PROTOCOLS, headers))
        await self._log(HTTPStatus.SWITCHING_PROTOCOLS)

    async def _refuse(self, status: int) -> None:
        self._to(Answer.RESPONSE)
        await self._write(self._head(status, [(b"content-length", b"0"), (b"connection", b"close")]))
        await self._answered(status)

    async def _answered(self, status: int) -> None:
        """A refusal went out whole: log it, end the stream."""
        await self._log(status)
        self._to(Answer.CLOSED)
        self._end_stream()

    async def _log(self, status: int) -> None:
        await self._config.log.access(self._scope, {"status": status, "headers": []}, time.time() - self._started)

    async def before_accept(self, data: bytes) -> None:
        await self._refuse(HTTPStatus.BAD_REQUEST)  # frames before the accept, as Hypercorn answers them

    async def lost(self) -> None:
        self._end_stream()

    async def end(self) -> None:
        self._end_stream()

    def _end_stream(self) -> None:
        if not self.ended:
            self.ended = True
            code = CloseCode.NORMAL if self._state is Answer.CLOSED else CloseCode.ABNORMAL
            self._inbox.append({"type": "websocket.disconnect", "code": int(code)})

    def closing(self) -> None:
        self._to(Answer.CLOSED)

    async def refused_send(self, message: dict[str, Any]) -> None:
        raise RuntimeError(f"unexpected ASGI message {message.get('type')!r} on this WebSocket now")
