"""Turn the URL a user gives into the address of the server's ``/ws`` channel (or its HTTP base).

The one rule every entry point applies (client, compat, ``demo``, ``check``, the TRL
factory; PROTOCOL.md section 1): ``http://`` -> ``ws://``, ``https://`` -> ``wss://``,
``ws://``/``wss://`` are kept, a bare ``host:port`` means ``ws://``; a path prefix is kept
and ``/ws`` appended, except that a path ending in ``/ws``, whatever the scheme, is the
agent channel's own URL (what ``openenv-anyio serve`` prints): its base is the path before
``/ws``. Anything unusable raises ``ValueError`` when the client is built, not later when
it connects.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["WebSocketAddress", "http_base_url", "websocket_address"]

_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
_DEFAULT_PORTS = {"ws": 80, "wss": 443}
AGENT_CHANNEL = "/ws"


@dataclass(frozen=True, slots=True)
class WebSocketAddress:
    """Where to open a WebSocket: scheme, host, port and the request target."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def secure(self) -> bool:
        return self.scheme == "wss"

    @property
    def host_header(self) -> str:
        """The ``Host`` header value: the port is left out when it is the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.target}"

    def __str__(self) -> str:
        return self.url


def websocket_address(base_url: str, channel: str = "/ws") -> WebSocketAddress:
    """The WebSocket address of ``channel`` on the server at ``base_url``.

    A URL whose path ends in ``/ws`` (any scheme) is the agent channel's own URL (what
    ``openenv-anyio serve`` prints): its base is the path before ``/ws``. A server mounted
    under a prefix that itself ends in ``/ws`` is reached by naming its channel
    (``http://HOST/ws/ws``).

    Raises ``ValueError`` naming the problem when ``base_url`` cannot be used.
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError(f"base_url must be a non-empty string, not {base_url!r}")
    text = base_url.strip()
    if "://" not in text:
        text = "ws://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid base_url {base_url!r}: {exc}") from None
    scheme = _SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise ValueError(f"invalid base_url {base_url!r}: scheme {parts.scheme!r} is not one of http, https, ws, wss")
    if not parts.hostname:
        raise ValueError(f"invalid base_url {base_url!r}: no host")
    if parts.username or parts.password:
        raise ValueError(f"invalid base_url {base_url!r}: credentials in the URL are not supported")
    if parts.query or parts.fragment:
        raise ValueError(f"invalid base_url {base_url!r}: a base URL has no query or fragment")
    if port == 0:
        raise ValueError(f"invalid base_url {base_url!r}: port 0")
    prefix = parts.path.rstrip("/")
    if prefix.endswith(AGENT_CHANNEL):
        prefix = prefix.removesuffix(AGENT_CHANNEL)  # the agent channel's own URL
    return WebSocketAddress(
        scheme=scheme,
        host=parts.hostname,
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        target=f"{prefix}{channel}",
    )


def http_base_url(url: str) -> str:
    """The server's HTTP base URL (``http(s)://HOST[:PORT][PREFIX]``, no trailing ``/``) for
    any ``url`` :func:`websocket_address` takes, by the same rule. Raises ``ValueError``."""
    address = websocket_address(url)
    prefix = address.target.removesuffix(AGENT_CHANNEL)
    return f"{'https' if address.secure else 'http'}://{address.host_header}{prefix}"
