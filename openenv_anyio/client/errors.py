"""The client's one error hierarchy: every failure a caller sees is an ``EnvClientError``.

Connection failures, timeouts (also ``TimeoutError``), oversized frames, closes by the
server, error frames (``ServerError``, one subclass per code of the registry
``spec/v1/error-codes.json``) and JSON-RPC errors of tool calls (``RpcError``, one subclass
per code of ``spec/v1/jsonrpc-error-codes.json``) each have a class whose attributes say
what happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import ErrorCode, RpcCode

__all__ = [
    "CapacityReached",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionClosedByServer",
    "ConnectionDropped",
    "ConnectionLost",
    "ConnectionRefused",
    "EnvClientError",
    "EnvExecutionError",
    "EnvFactoryError",
    "EpisodeMismatch",
    "HandshakeRejected",
    "InvalidJsonError",
    "MessageTimeout",
    "MessageTooLarge",
    "NotConnected",
    "ProtocolViolation",
    "ProxyRejected",
    "ReplayMismatch",
    "RequestIdReused",
    "ServerBusy",
    "ValidationRefused",
    "RequestValidationError",
    "RpcError",
    "RpcEpisodeMismatch",
    "RpcInvalidParams",
    "RpcInvalidRequest",
    "RpcMethodNotFound",
    "RpcParseError",
    "RpcServerError",
    "ToolFailed",
    "ResumeFailed",
    "ServerError",
    "ServerMessageTooLarge",
    "SessionError",
    "SessionNotFound",
    "UnknownTypeError",
    "UsedAfterFork",
]


class EnvClientError(Exception):
    """Base class of every error the client raises."""


# -- opening the connection ------------------------------------------------------------


class ConnectError(EnvClientError, ConnectionError):
    """The WebSocket connection could not be opened."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"cannot connect to {url}: {detail}")
        self.url = url


class ConnectionRefused(ConnectError):
    """Nothing accepts TCP connections at the server's address."""


class HandshakeRejected(ConnectError):
    """The server answered the WebSocket opening handshake with an HTTP error status."""

    def __init__(self, url: str, status: int, body: bytes = b"") -> None:
        shown = " ".join(body[:200].decode("utf-8", "replace").split())  # one line
        if shown.startswith("<"):  # a web page (a 404 page, a proxy's): its markup says nothing here
            shown = "an HTML page"
        detail = f"handshake rejected with HTTP {status}" + (f": {shown}" if shown else "")
        if status == 404:
            detail += " (no OpenEnv agent channel there: is the URL the server's base URL?)"
        super().__init__(url, detail)
        self.status = status
        self.body = body


class ProxyRejected(ConnectError):
    """The HTTP proxy refused to open a tunnel (CONNECT answered with ``status``)."""

    def __init__(self, url: str, proxy_url: str, status: int) -> None:
        super().__init__(url, f"the proxy {proxy_url} answered CONNECT with HTTP {status}")
        self.proxy_url = proxy_url
        self.status = status


class ConnectTimeout(ConnectError, TimeoutError):
    """TCP connect and opening handshake did not finish within ``connect_timeout_s``."""

    def __init__(self, url: str, limit_s: float) -> None:
        super().__init__(url, f"no WebSocket handshake within connect_timeout_s={limit_s:g} s")
        self.limit_s = limit_s


# -- during a request ------------------------------------------------------------------


class MessageTimeout(EnvClientError, TimeoutError):
    """A request's answer did not arrive within ``message_timeout_s``.

    The client drops the connection (the late answer can never reach a later request);
    the session on the server is gone.
    """

    def __init__(self, url: str, request: str, limit_s: float) -> None:
        super().__init__(
            f"no answer to {request} from {url} within message_timeout_s={limit_s:g} s; the connection was dropped"
        )
        self.url = url
        self.request = request
        self.limit_s = limit_s


class MessageTooLarge(EnvClientError):
    """An inbound frame exceeded ``max_message_size_mb``; the client closed with 1009."""

    def __init__(self, url: str, size: int, limit: int) -> None:
        super().__init__(
            f"a frame from {url} of at least {size} bytes exceeds the limit of {limit} bytes "
            f"(max_message_size_mb={limit / 2**20:g}); the connection was closed with 1009"
        )
        self.url = url
        self.size = size
        self.limit = limit


class ProtocolViolation(EnvClientError):
    """The server sent something the protocol does not allow (an invalid or unexpected frame)."""

    def __init__(self, url: str, detail: str, *, pointer: str = "") -> None:
        super().__init__(f"protocol violation by {url}: {detail}")
        self.url = url
        self.pointer = pointer


# -- the connection ended --------------------------------------------------------------


class ConnectionLost(EnvClientError, ConnectionError):
    """The connection ended without a WebSocket close (reset, EOF, unanswered pings)."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"connection to {url} lost: {detail}")
        self.url = url


class ConnectionClosedByServer(ConnectionLost):
    """The server closed the WebSocket; ``code`` and ``reason`` are from its close frame."""

    def __init__(self, url: str, code: int, reason: str = "") -> None:
        EnvClientError.__init__(
            self, f"{url} closed the connection with code {code}" + (f": {reason}" if reason else "")
        )
        self.url = url
        self.code = code
        self.reason = reason


class ConnectionDropped(EnvClientError, ConnectionError):
    """A call on a client whose connection has ended; ``cause`` says why it ended.

    After a timeout, a cancellation mid-request or any connection failure the client never
    reuses the connection (a late answer must not reach a later request, WS-ORDER-3): open
    a new client to start a new session.
    """

    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(f"the connection to {url} is no longer usable ({cause}); open a new EnvClient")
        self.url = url
        self.cause = cause


class ResumeFailed(ConnectionDropped):
    """The connection broke and the session could not be resumed (resume extension).

    ``cause`` is the last failure: the server could not be reached within the reconnect
    policy's time budget (``within_s``) or attempts, it refused the resume in a way trying
    again does not repair, or it no longer accepts the extension. The episode is not
    silently replaced by a fresh one: open a new client to start over. (An expired or
    unknown session raises :class:`SessionNotFound` instead; an episode a restarted server
    could not replay exactly, :class:`ReplayMismatch`.)
    """

    def __init__(self, url: str, detail: str, cause: BaseException) -> None:
        EnvClientError.__init__(self, f"the session at {url} could not be resumed: {detail} ({cause})")
        self.url = url
        self.cause = cause


class ReplayMismatch(ResumeFailed):
    """REPLAY_MISMATCH while resuming (``EXT-HAND-3``): a server that took the session over
    from its session store brought the episode back by replaying it, and the environment
    answered a recorded request otherwise than it had. The episode is lost rather than
    continued as a different one. ``cause`` is the server's error frame
    (:class:`ServerError`: its ``message`` says which request differed)."""

    def __init__(self, url: str, cause: ServerError) -> None:
        super().__init__(url, "the restarted server's replay of the episode answered otherwise", cause)


class NotConnected(EnvClientError, RuntimeError):
    """A call on a client that is not open (or closed): use ``async with EnvClient(url) as env``.

    Also a ``RuntimeError``, what upstream's client raises for a client it cannot use."""


class UsedAfterFork(NotConnected):
    """A blocking client used in a process forked from the one that opened it (``os.fork``,
    ``multiprocessing``'s ``fork`` start method): its connection and the thread running its
    event loop stayed in the parent. Create the client in the child process."""


# -- error frames ----------------------------------------------------------------------


class ServerError(EnvClientError, RuntimeError):
    """The server answered with an error frame (WS-ERR-8): ``code``, ``message``, ``extra``.

    Also a ``RuntimeError``: upstream's client raises that for an error frame, so code written
    for it catches ours."""

    error_code: ErrorCode | None = None

    def __init__(self, code: str, message: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra: dict[str, Any] = dict(extra or {})

    @staticmethod
    def from_frame(code: str, message: str, extra: Mapping[str, Any] | None = None) -> ServerError:
        """The most specific ``ServerError`` subclass for ``code``."""
        cls = _BY_CODE.get(code, ServerError)
        return cls(code, message, extra)


class InvalidJsonError(ServerError):
    """INVALID_JSON: the server could not parse the frame as JSON."""

    error_code = ErrorCode.INVALID_JSON


class UnknownTypeError(ServerError):
    """UNKNOWN_TYPE: the frame's type is missing or unknown to the server."""

    error_code = ErrorCode.UNKNOWN_TYPE


class RequestValidationError(ServerError):
    """VALIDATION_ERROR: the frame or its action does not match the schema; see ``errors``."""

    error_code = ErrorCode.VALIDATION_ERROR

    @property
    def errors(self) -> list[Any]:
        value = self.extra.get("errors")
        return list(value) if isinstance(value, list) else []


class EnvExecutionError(ServerError):
    """EXECUTION_ERROR: the environment raised while handling the request."""

    error_code = ErrorCode.EXECUTION_ERROR


class CapacityReached(ServerError):
    """CAPACITY_REACHED: the server runs its maximum of sessions; the connection is closed."""

    error_code = ErrorCode.CAPACITY_REACHED


class EnvFactoryError(ServerError):
    """FACTORY_ERROR: the server could not create the environment; the connection is closed."""

    error_code = ErrorCode.FACTORY_ERROR


class SessionError(ServerError):
    """SESSION_ERROR: the session failed in a way no other code covers."""

    error_code = ErrorCode.SESSION_ERROR


class EpisodeMismatch(ServerError):
    """EPISODE_MISMATCH (extension): the request named another episode; nothing changed."""

    error_code = ErrorCode.EPISODE_MISMATCH


class SessionNotFound(ServerError):
    """SESSION_NOT_FOUND (extension): no session matches the resume token."""

    error_code = ErrorCode.SESSION_NOT_FOUND


class ServerMessageTooLarge(ServerError):
    """MESSAGE_TOO_LARGE: a frame the client sent exceeded the server's limit."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RequestIdReused(ServerError):
    """REQUEST_ID_REUSED (extension): the last ``request_id`` was sent with another request."""

    error_code = ErrorCode.REQUEST_ID_REUSED


class ServerBusy(ServerError):
    """SERVER_BUSY: the server had no room for a large frame (its bound on inbound bytes in
    flight); the frame was dropped unread and nothing ran: send it again later."""

    error_code = ErrorCode.SERVER_BUSY


class ValidationRefused(ServerError):
    """VALIDATION_REFUSED (extension): the server refused a validation telemetry request (off,
    a wrong token or capability, after the first reset, or open already); the session goes on."""

    error_code = ErrorCode.VALIDATION_REFUSED


_BY_CODE: dict[str, type[ServerError]] = {
    cls.error_code.value: cls
    for cls in (
        InvalidJsonError,
        UnknownTypeError,
        RequestValidationError,
        EnvExecutionError,
        CapacityReached,
        EnvFactoryError,
        SessionError,
        EpisodeMismatch,
        SessionNotFound,
        ServerMessageTooLarge,
        RequestIdReused,
        ServerBusy,
        ValidationRefused,
    )
    if cls.error_code is not None
}


# -- JSON-RPC errors (tools over MCP) ---------------------------------------------------


class RpcError(EnvClientError, RuntimeError):
    """A JSON-RPC error answered a tool request (MCP-ERR-1): ``code``, ``message``, ``data``.

    Also a ``RuntimeError``, what upstream's ``call_tool`` raises for a failed tool call."""

    rpc_code: RpcCode | None = None

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @staticmethod
    def from_error(error: Mapping[str, Any]) -> RpcError:
        """The most specific ``RpcError`` subclass for a response's ``error`` object."""
        code = error.get("code")
        cls = _BY_RPC_CODE.get(code, RpcError) if isinstance(code, int) else RpcError
        return cls(code if isinstance(code, int) else 0, str(error.get("message", "")), error.get("data"))


class RpcParseError(RpcError):
    """-32700: the server could not parse the request as JSON."""

    rpc_code = RpcCode.PARSE_ERROR


class RpcInvalidRequest(RpcError):
    """-32600: not a JSON-RPC request."""

    rpc_code = RpcCode.INVALID_REQUEST


class RpcMethodNotFound(RpcError):
    """-32601: the method is not offered (or the environment has no tools)."""

    rpc_code = RpcCode.METHOD_NOT_FOUND


class RpcInvalidParams(RpcError):
    """-32602: an unknown tool or session, or arguments that do not match the tool's inputSchema."""

    rpc_code = RpcCode.INVALID_PARAMS


class ToolFailed(RpcError):
    """-32603: the tool raised; ``data["tool"]`` names it."""

    rpc_code = RpcCode.INTERNAL_ERROR


class RpcServerError(RpcError):
    """-32000: the server could not create a session (capacity, factory)."""

    rpc_code = RpcCode.SERVER_ERROR


class RpcEpisodeMismatch(RpcError):
    """-32001: the request named an episode that is not the session's; nothing changed."""

    rpc_code = RpcCode.EPISODE_MISMATCH


_BY_RPC_CODE: dict[int, type[RpcError]] = {
    int(cls.rpc_code): cls
    for cls in (
        RpcParseError,
        RpcInvalidRequest,
        RpcMethodNotFound,
        RpcInvalidParams,
        ToolFailed,
        RpcServerError,
        RpcEpisodeMismatch,
    )
    if cls.rpc_code is not None
}
