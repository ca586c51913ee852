"""HTTP proxies for remote servers: which proxy (if any) to use, and the CONNECT tunnel.

The usual conventions: ``ws://`` uses ``HTTP_PROXY``, ``wss://`` uses ``HTTPS_PROXY``,
either falls back to ``ALL_PROXY`` (lower-case names first); ``NO_PROXY`` lists hosts and
domains reached directly (``*`` for all). A loopback server is never reached through a
proxy. The environment is only read, never changed.

This is the project's one proxy rule: the conformance kit and the demo ask
:func:`proxy_url_for` which proxy their HTTP requests take, so every part reaches a server
the same way.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

import anyio
import anyio.abc
import h11

from ..core.addresses import is_loopback_host
from .errors import ConnectError, ConnectionRefused, ProxyRejected
from .urls import WebSocketAddress, websocket_address

__all__ = ["HttpProxy", "is_loopback_host", "open_tunnel", "parse_proxy_url", "proxy_from_environment", "proxy_url_for"]

READ_SIZE: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class HttpProxy:
    """An ``http://`` proxy that tunnels with CONNECT; ``authorization`` is a header value."""

    host: str
    port: int
    authorization: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def parse_proxy_url(url: str) -> HttpProxy:
    """An :class:`HttpProxy` from ``http://[user:password@]host[:port]``; ValueError otherwise."""
    text = url.strip() if "://" in url else "http://" + url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid proxy URL {url!r}: {exc}") from None
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ValueError(f"invalid proxy URL {url!r}: only http://host[:port] proxies are supported")
    authorization = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(credentials).decode("ascii")
    return HttpProxy(parts.hostname, port or 80, authorization)


def _bypassed(host: str, no_proxy: str) -> bool:
    host = host.lower().rstrip(".")
    for entry in (item.strip().lower() for item in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if entry.startswith("[") and "]" in entry:  # [v6]:port
            entry = entry[1 : entry.index("]")]
        elif entry.count(":") == 1:  # host:port
            entry = entry.split(":", 1)[0]
        entry = entry.lstrip(".").rstrip(".")
        if host == entry or host.endswith("." + entry):
            return True
    return False


def _setting(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name.lower()) or environ.get(name.upper()) or ""


def _proxy_setting(address: WebSocketAddress, environ: Mapping[str, str]) -> str | None:
    if is_loopback_host(address.host) or _bypassed(address.host, _setting(environ, "no_proxy")):
        return None
    return (
        _setting(environ, "https_proxy" if address.secure else "http_proxy") or _setting(environ, "all_proxy") or None
    )


def proxy_from_environment(address: WebSocketAddress, environ: Mapping[str, str]) -> HttpProxy | None:
    """The proxy the environment names for ``address``, or None to connect directly."""
    url = _proxy_setting(address, environ)
    return parse_proxy_url(url) if url else None


def proxy_url_for(server_url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy URL (as ``environ`` gives it) for requests to ``server_url`` (``http(s)://``,
    ``ws(s)://`` or ``host:port``), or None to connect directly: the rule the client follows.

    Raises ValueError for a URL the client would refuse.
    """
    return _proxy_setting(websocket_address(server_url), environ)


async def open_tunnel(proxy: HttpProxy, address: WebSocketAddress) -> anyio.abc.SocketStream:
    """A TCP stream to ``address`` through ``proxy`` (HTTP CONNECT); the caller bounds the time."""
    url = address.url
    try:
        stream = await anyio.connect_tcp(proxy.host, proxy.port)
    except OSError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        if isinstance(cause, ConnectionRefusedError):
            raise ConnectionRefused(url, f"the proxy {proxy.url} refused the connection") from exc
        raise ConnectError(url, f"cannot reach the proxy {proxy.url}: {cause}") from exc
    try:
        return await _connect_request(stream, proxy, address)
    except BaseException:
        await anyio.aclose_forcefully(stream)
        raise


async def _connect_request(
    stream: anyio.abc.SocketStream, proxy: HttpProxy, address: WebSocketAddress
) -> anyio.abc.SocketStream:
    url = address.url
    authority = f"[{address.host}]:{address.port}" if ":" in address.host else f"{address.host}:{address.port}"
    headers = [("Host", authority)]
    if proxy.authorization:
        headers.append(("Proxy-Authorization", proxy.authorization))
    http = h11.Connection(our_role=h11.CLIENT)
    try:
        await stream.send(http.send(h11.Request(method="CONNECT", target=authority, headers=headers)))
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                try:
                    http.receive_data(await stream.receive(READ_SIZE))
                except anyio.EndOfStream:
                    raise ConnectError(url, f"the proxy {proxy.url} closed the connection") from None
            elif isinstance(event, h11.Response):
                if 200 <= event.status_code < 300:
                    return stream
                raise ProxyRejected(url, proxy.url, event.status_code)
            elif not isinstance(event, h11.InformationalResponse):
                raise ConnectError(url, f"unexpected answer from the proxy {proxy.url}")
    except h11.RemoteProtocolError as exc:
        raise ConnectError(url, f"invalid answer from the proxy {proxy.url}: {exc}") from exc
    except anyio.BrokenResourceError as exc:
        raise ConnectError(url, f"the proxy {proxy.url} failed: {exc}") from exc
