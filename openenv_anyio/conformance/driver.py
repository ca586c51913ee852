"""A raw-frame driver for servers under test: trio + trio-websocket, and httpx for HTTP.

It is deliberately independent of the project's client: it sends whatever the case asks
for (broken JSON, binary frames, oversize frames, several requests before reading) and
records every frame both ways, with close codes, in a :class:`~.evidence.Recorder`.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio
import trio_websocket

from ..client.urls import http_base_url
from ..core import AFFINITY_HEADER, dumps
from .evidence import Received, Recorder, preview

__all__ = ["DriverError", "HttpProbe", "ServerClosed", "Target", "WsConnection", "open_ws"]

#: the largest frame the driver accepts from a server (above the protocol's 100 MiB default)
MAX_RECEIVE_BYTES = 256 * 2**20
DISCONNECT_TIMEOUT_S = 2.0


class DriverError(Exception):
    """The driver could not do what a case asked (connection refused, handshake rejected)."""


class HandshakeRejected(DriverError):
    """The server refused the WebSocket opening handshake (``status`` is its HTTP status)."""

    def __init__(self, path: str, status: int | None) -> None:
        super().__init__(f"the server refused the WebSocket handshake on {path} (HTTP {status})")
        self.status = status


class ServerClosed(DriverError):
    """The server closed the connection while the case expected a frame."""

    def __init__(self, code: int | None, reason: str | None) -> None:
        super().__init__(f"the server closed the connection (code {code}, reason {reason!r})")
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Target:
    """The server under test: its HTTP base URL and its WebSocket base URL (no trailing /),
    and the headers every request to it carries (a bearer token: never shown, never logged)."""

    http_base: str
    ws_base: str
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def from_url(cls, url: str, *, token: str | None = None) -> Target:
        """Accept ``http(s)://`` or ``ws(s)://`` URLs, read by the client's one rule (a path
        ending in ``/ws`` is the agent channel's own URL: its base is the path before it).
        ``token`` is sent as ``Authorization: Bearer TOKEN`` (``SEC-TOKEN-1``)."""
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
            raise ValueError(f"not an http(s):// or ws(s):// URL: {url!r}")
        http_base = http_base_url(url)
        return cls(
            http_base=http_base,
            ws_base="ws" + http_base.removeprefix("http"),
            headers=(("Authorization", f"Bearer {token}"),) if token else (),
        )

    @property
    def host_port(self) -> tuple[str, int]:
        parts = urllib.parse.urlsplit(self.http_base)
        return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


class WsConnection:
    """One recorded WebSocket connection to the server."""

    def __init__(self, ws: trio_websocket.WebSocketConnection, recorder: Recorder, channel: str) -> None:
        self._ws = ws
        self._recorder = recorder
        self.channel = channel
        self.number = recorder.new_connection()
        self._close_logged = False

    @property
    def subprotocol(self) -> str | None:
        return self._ws.subprotocol

    @property
    def close_code(self) -> int | None:
        reason = self._ws.closed
        return reason.code if reason is not None else None

    async def send_text(self, text: str) -> None:
        self._recorder.sent(self.channel, self.number, text)
        await self._send(text)

    async def send_binary(self, data: bytes) -> None:
        self._recorder.sent(self.channel, self.number, data)
        await self._send(data)

    async def send_json(self, value: Any) -> None:
        await self.send_text(dumps(value))

    async def _send(self, message: str | bytes) -> None:
        try:
            await self._ws.send_message(message)
        except trio_websocket.ConnectionClosed as exc:
            raise self._closed(exc.reason) from None

    async def receive(self) -> Received:
        """The next frame; raises :class:`ServerClosed` once the server has closed."""
        try:
            message = await self._ws.get_message()
        except trio_websocket.ConnectionClosed as exc:
            raise self._closed(exc.reason) from None
        return self._recorder.received(self.channel, self.number, message)

    async def request(self, value: Any) -> Received:
        """Send one JSON frame and receive the next frame."""
        await self.send_json(value)
        return await self.receive()

    async def wait_closed(self) -> tuple[list[Received], ServerClosed]:
        """Read until the server closes; return the frames that came first and the close."""
        frames: list[Received] = []
        while True:
            try:
                frames.append(await self.receive())
            except ServerClosed as closed:
                return frames, closed

    def _closed(self, reason: trio_websocket.CloseReason | None) -> ServerClosed:
        code = reason.code if reason is not None else None
        text = reason.reason if reason is not None else None
        self.log_close(code, text)
        return ServerClosed(code, text)

    def log_close(self, code: int | None, reason: str | None) -> None:
        if not self._close_logged:
            self._close_logged = True
            self._recorder.add(self.channel, self.number, "closed", "close", close_code=code, close_reason=reason)


@contextlib.asynccontextmanager
async def open_ws(
    target: Target,
    recorder: Recorder,
    path: str = "/ws",
    *,
    connect_timeout: float = 10.0,
    subprotocols: Sequence[str] = (),
    headers: Sequence[tuple[str, str]] = (),
) -> AsyncIterator[WsConnection]:
    """Open a WebSocket on ``path`` (offering ``subprotocols``, none by default, and sending
    ``headers`` with the upgrade request); close it (code 1000) on exit."""
    url = target.ws_base + path
    headers = (*target.headers, *headers)
    offered = f"offering {', '.join(subprotocols)}" if subprotocols else "no subprotocol offered"
    # values may be secrets, except the affinity key, which only steers a balancer
    shown_headers = "".join(
        f", {name}: {value}" if name == AFFINITY_HEADER else f", {name} header" for name, value in headers
    )
    body_error: BaseException | None = None
    try:
        async with trio_websocket.open_websocket_url(
            url,
            max_message_size=MAX_RECEIVE_BYTES,
            connect_timeout=connect_timeout,
            disconnect_timeout=DISCONNECT_TIMEOUT_S,
            subprotocols=list(subprotocols) or None,
            extra_headers=[(name.encode("ascii"), value.encode("latin-1")) for name, value in headers] or None,
        ) as ws:
            connection = WsConnection(ws, recorder, path)
            recorder.add(path, connection.number, "sent", "open", preview=f"GET {url} ({offered}{shown_headers})")
            try:
                yield connection
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                reason = ws.closed
                if reason is not None:
                    connection.log_close(reason.code, reason.reason)
    except trio_websocket.ConnectionRejected as exc:
        raise HandshakeRejected(path, exc.status_code) from None
    except trio_websocket.DisconnectionTimeout:
        # the server did not finish the closing handshake in time; what the case concluded
        # (its own exception, if any) is what counts
        if body_error is not None:
            raise body_error from None
    except trio_websocket.HandshakeError as exc:
        cause = exc.__cause__ or exc
        raise DriverError(f"cannot open {url}: {type(cause).__name__} {cause}".rstrip()) from None


@dataclass(frozen=True, slots=True)
class HttpReply:
    """An HTTP answer: status and the parsed JSON body (None when the body is not JSON)."""

    status: int
    body: Any
    text: str


class HttpProbe:
    """Recorded HTTP requests to the server (channel ``http`` in the wire log)."""

    def __init__(self, client: httpx.AsyncClient, target: Target, recorder: Recorder) -> None:
        self._client = client
        self._target = target
        self._recorder = recorder

    async def request(self, method: str, path: str, body: Any = None) -> HttpReply:
        number = self._recorder.new_connection()
        shown = f"{method} {path}" + ("" if body is None else f" {preview(dumps(body), 200)}")
        self._recorder.add("http", number, "sent", "request", preview=shown)
        content = None if body is None else dumps(body).encode()
        headers = dict(self._target.headers)
        if body is not None:
            headers["content-type"] = "application/json"
        try:
            response = await self._client.request(
                method, self._target.http_base + path, content=content, headers=headers
            )
        except httpx.HTTPError as exc:
            raise DriverError(f"{method} {path} failed: {type(exc).__name__} {exc}".rstrip()) from None
        text = response.text
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        self._recorder.add(
            "http",
            number,
            "received",
            "response",
            length=len(text),
            preview=f"HTTP {response.status_code} {preview(text, 240)}",
        )
        return HttpReply(response.status_code, parsed, text)


async def check_reachable(target: Target, timeout: float) -> None:
    """Raise :class:`DriverError` when nothing accepts TCP connections at the target."""
    host, port = target.host_port
    try:
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
    except trio.TooSlowError:
        raise DriverError(f"cannot reach {target.http_base}: no answer within {timeout:g} s") from None
    except OSError as exc:
        raise DriverError(f"cannot reach {target.http_base}: {exc.strerror or exc}") from None
    await stream.aclose()
