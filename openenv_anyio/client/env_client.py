"""``EnvClient``: one session with an environment server, for asyncio and trio programs.

    async with EnvClient("http://127.0.0.1:8000") as env:
        result = await env.reset(seed=1)
        result = await env.step({"message": "hi"})
        state = await env.state()

Each request is bounded by a cancel scope (``message_timeout_s``). Requests from several
tasks on one client are serialised (each gets its own answer). A request abandoned after
it was sent (timeout or cancellation) drops the connection: a late answer can never be
handed to a later request (WS-ORDER-3), and every later call raises ``ConnectionDropped``.
The client closes such a connection with 1001 rather than cutting it, so a server keeping
sessions for resuming frees the slot at once (EXT-RES-2).

Against a server that accepts the resume extension (PROTOCOL.md section 10) a connection
that breaks is resumed: the client reconnects with the session's token and sends the
request again with the same ``request_id``, which the server answers exactly once. A server
that keeps its sessions in a session store hands them over when it restarts (close 1012):
the client keeps trying for its reconnect policy's ``within_s`` (through refused
connections and 1013 closes while the server is away) and the restarted server takes the
session back (EXT-HAND-1 to EXT-HAND-6).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, TypeVar, assert_never

import anyio
import anyio.abc

from ..core import (
    SUBPROTOCOL,
    ClientFrame,
    Close,
    CloseCode,
    Error,
    ErrorCode,
    Mcp,
    McpMethod,
    Observation,
    ProtocolError,
    Reset,
    Session,
    StateRequest,
    Step,
    Validation,
    ValidationOpen,
    ValidationOpened,
    ValidationRead,
    check_affinity_key,
    decode_server_frame,
    dumps,
    encode_frame,
    new_affinity_key,
    spec_validator,
)
from ..core import State as StateFrame
from .errors import (
    ConnectionDropped,
    ConnectTimeout,
    EnvClientError,
    MessageTimeout,
    NotConnected,
    ProtocolViolation,
    ReplayMismatch,
    ResumeFailed,
    RpcError,
    ServerError,
    SessionNotFound,
)
from .handshake_headers import HandshakeHeaders
from .proxy import HttpProxy, parse_proxy_url, proxy_from_environment
from .reconnect import ReconnectPolicy, retry_resume_after, worth_resuming
from .results import State, StepResult, Tool
from .sync import SyncEnvClient
from .transport import WebSocketTransport
from .urls import WebSocketAddress, websocket_address

__all__ = ["EnvClient", "ReconnectPolicy", "State", "StepResult", "Tool"]

_Answer = TypeVar("_Answer", Observation, StateFrame, Mcp, ValidationOpened, Validation)
_CLOSE_TEXT: Final = encode_frame(Close())

CLOSE_WAIT_S: Final = 1.0  # for the server's close after our ``close`` frame (WS-CLOSE-1)
CLOSE_TIMEOUT_S: Final = 2.0  # for the answer to a close frame of ours


def _positive(name: str, value: float | None, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


def _authorization(token: str | None, headers: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The ``Authorization`` header for ``token`` (checked without ever showing it)."""
    if token is None:
        return []
    if not isinstance(token, str) or not token or any(not 0x21 <= ord(c) <= 0x7E for c in token):
        raise ValueError("token must be a non-empty string of printable ASCII without spaces")
    if any(name.lower() == "authorization" for name in headers or {}):
        raise ValueError("give token= or an Authorization header in headers=, not both")
    return [("Authorization", f"Bearer {token}")]


def _action_mapping(action: Any) -> Mapping[str, Any]:
    if isinstance(action, (dict, Mapping)):
        return action
    dump = getattr(action, "model_dump", None)  # pydantic models
    if callable(dump):
        dumped: Mapping[str, Any] = dump(mode="json")
        return dumped
    if dataclasses.is_dataclass(action) and not isinstance(action, type):
        return dataclasses.asdict(action)
    raise TypeError(f"an action is a mapping, a dataclass or a pydantic model, not {type(action).__name__}")


class EnvClient:
    """An anyio client for one environment session over ``/ws``.

    ``base_url`` is the server's base URL (``http(s)://``, ``ws(s)://`` or ``host:port``;
    a path prefix is kept). Parameters and defaults follow the OpenEnv client:
    ``connect_timeout_s`` bounds TCP connect plus the opening handshake,
    ``message_timeout_s`` each answer (None: no limit), ``max_message_size_mb`` (MiB) every
    inbound frame. ``ping_interval_s`` / ``ping_timeout_s`` drive client-side keep-alive
    pings (None disables them); the server's pings are always answered, even while idle.
    Proxies: ``proxy`` (``http://[user:password@]host:port``) tunnels through that HTTP
    proxy; otherwise, with ``trust_env``, ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``
    and ``NO_PROXY`` are read once here. A loopback server is never reached through a proxy
    taken from the environment, and ``os.environ`` is never changed. ``headers`` are extra
    HTTP headers for the opening handshake (``{"Authorization": "Bearer ..."}`` for a private
    deployment), sent on the first connection and on every reconnection, never logged; a
    name the handshake owns (``Host``, ``Sec-WebSocket-*``, ...) or a value with a line break
    is a ``ValueError`` here.

    Resume extension: the client offers the ``openenv-anyio.v1`` subprotocol. When the
    server accepts it and ``reconnect`` is on (``True``: the default
    :class:`ReconnectPolicy`; or a policy of your own), a broken connection is resumed
    during or between requests and the caller sees one result per request, each executed
    once. Resuming goes on for the policy's ``within_s`` (default 15 s), so a server that
    restarts with a session store (close 1012, ``EXT-HAND-1``) is ridden out too. When
    resuming fails the caller gets :class:`ResumeFailed`, :class:`SessionNotFound` (the
    server does not have the session, or could not bring it back) or
    :class:`ReplayMismatch` (a restarted server replayed the episode and it came out
    otherwise), never a fresh episode. ``pin_episode=True`` sends the
    episode of the last reset with every step, so a step never acts on another episode
    (:class:`EpisodeMismatch`). ``reconnect=False`` and ``pin_episode=False`` offer no
    subprotocol: the base protocol only. A server that does not accept the extension
    (openenv-core) is spoken to in the base protocol, as if neither were set.

    Load balancers: every connection of the session (the first and each resume) carries the
    ``OpenEnv-Affinity`` header with the same random key (``affinity_key``: None makes
    one; ``EXT-AFF-1``), so a proxy hashing on it sends a resume to the session's server.

    ``token``: a bearer token, shorthand for ``headers={"Authorization": "Bearer TOKEN"}``
    (one or the other), sent with every connection, reconnections included (``SEC-TOKEN-1``). It is never
    logged and appears in no ``repr`` or error message; a server that refuses it raises
    :class:`HandshakeRejected` with ``status`` 401 (403 for a refused origin or role).
    """

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float | None = 60.0,
        max_message_size_mb: float = 100.0,
        ping_interval_s: float | None = 20.0,
        ping_timeout_s: float | None = 20.0,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        reconnect: bool | ReconnectPolicy = True,
        pin_episode: bool = False,
        headers: Mapping[str, str] | None = None,
        affinity_key: str | None = None,
        token: str | None = None,
    ) -> None:
        self.address: WebSocketAddress = websocket_address(base_url)
        #: sent in ``OpenEnv-Affinity`` on every connection of this session (EXT-AFF-1)
        self.affinity_key = new_affinity_key() if affinity_key is None else check_affinity_key(affinity_key)
        self._handshake_headers = HandshakeHeaders(
            [*_authorization(token, headers), *(headers or {}).items()], affinity_key=self.affinity_key
        )
        self.connect_timeout_s = _positive("connect_timeout_s", connect_timeout_s)
        self.message_timeout_s = _positive("message_timeout_s", message_timeout_s, optional=True)
        size = _positive("max_message_size_mb", max_message_size_mb)
        assert size is not None
        self.max_message_size = int(size * 1024 * 1024)
        self.ping_interval_s = _positive("ping_interval_s", ping_interval_s, optional=True)
        self.ping_timeout_s = _positive("ping_timeout_s", ping_timeout_s, optional=True)
        self._ssl_context = ssl_context
        if proxy is not None:
            self.proxy: HttpProxy | None = parse_proxy_url(proxy)
        else:
            self.proxy = proxy_from_environment(self.address, os.environ) if trust_env else None
        self._transport: WebSocketTransport | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._dropped: EnvClientError | None = None
        self._closed = False
        self._client_frames = spec_validator("client-frame.json")
        self.reconnect_policy: ReconnectPolicy | None = (
            reconnect if isinstance(reconnect, ReconnectPolicy) else ReconnectPolicy() if reconnect else None
        )
        self.pin_episode = pin_episode
        self.session: Session | None = None  # the session frame, when the server accepted the extension
        self.resumes = 0  # connections resumed so far
        self._request_numbers = itertools.count(1)
        self._episode_id: str | None = None
        self._early: str | bytes | None = None  # a frame that came instead of the session frame

    @property
    def url(self) -> str:
        """The WebSocket URL of the session channel."""
        return self.address.url

    def __repr__(self) -> str:
        return f"EnvClient({self.url!r})"

    # -- lifetime ----------------------------------------------------------------------

    async def __aenter__(self) -> EnvClient:
        if self._task_group is not None or self._closed:
            raise RuntimeError("an EnvClient is opened once; create a new one for a new session")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        try:
            self._transport = await self._attach(None)
        except BaseException:
            task_group.cancel_scope.cancel()
            self._task_group = None
            await task_group.__aexit__(None, None, None)
            raise
        self._lock = anyio.Lock(fast_acquire=True)
        return self

    @property
    def episode_id(self) -> str | None:
        """The episode the last reset started, as the server reported it (resume extension;
        sent with every step when ``pin_episode`` is on), else None."""
        return self._episode_id

    @property
    def session_id(self) -> str | None:
        """The server's session id when the resume extension is on, else None."""
        return self.session.session_id if self.session is not None else None

    async def _attach(self, token: str | None) -> WebSocketTransport:
        """Connect (presenting ``token`` to resume), start the connection's tasks, and read
        the ``session`` frame when the server accepted the extension (EXT-SES-1)."""
        transport = await self._connect(token)
        task_group = self._task_group
        assert task_group is not None
        task_group.start_soon(transport.run_reader, name=f"{self!r} reader")
        if self.ping_interval_s is not None:
            task_group.start_soon(
                transport.run_keepalive, self.ping_interval_s, self.ping_timeout_s, name=f"{self!r} keep-alive"
            )
        if transport.subprotocol != SUBPROTOCOL:
            return transport
        try:
            with anyio.fail_after(self.connect_timeout_s):
                payload = await transport.receive()
            frame = decode_server_frame(payload)
        except TimeoutError:
            await self._abort(transport)
            raise ConnectTimeout(self.url, self.connect_timeout_s or 0.0) from None
        except ProtocolError as exc:
            await self._abort(transport)
            raise ProtocolViolation(self.url, exc.message, pointer=exc.pointer) from None
        except BaseException:
            await self._abort(transport)
            raise
        if isinstance(frame, Error):
            if token is None:  # e.g. CAPACITY_REACHED before a close: raised by the first request
                self._early = payload
                return transport
            await self._abort(transport)
            raise ServerError.from_frame(frame.code, frame.message, frame.extra)
        if not isinstance(frame, Session) or frame.resumed != (token is not None):
            await self._abort(transport)
            raise ProtocolViolation(self.url, "a negotiated connection must open with a session frame (EXT-SES-1)")
        self.session = frame
        return transport

    @staticmethod
    async def _abort(transport: WebSocketTransport) -> None:
        with anyio.CancelScope(shield=True):
            await transport.abort()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        task_group = self._task_group
        assert task_group is not None, "__aexit__ without __aenter__"
        closed = False
        try:
            await self.close()
            closed = True
        finally:
            # The group holds only the client's own tasks: each connection's reader and
            # keep-alive, which end by themselves once their connection is finished (ended,
            # socket closed). A completed close leaves the current connection finished, and
            # every earlier one was aborted when it was replaced. Otherwise they are
            # cancelled (not when nothing needs it: bench/README.md, "Client CPU per
            # session"). The caller's exception, if any, is not passed in, so it propagates
            # as itself (not wrapped in an exception group).
            transport = self._transport
            if not (closed and (transport is None or transport.finished)):
                task_group.cancel_scope.cancel()
            self._task_group = None
            await task_group.__aexit__(None, None, None)
        return None

    async def _connect(self, token: str | None = None) -> WebSocketTransport:
        offer = self.reconnect_policy is not None or self.pin_episode
        headers = self._handshake_headers.for_handshake(resume_token=token)
        try:
            with anyio.fail_after(self.connect_timeout_s):
                return await WebSocketTransport.open(
                    self.address,
                    max_message_size=self.max_message_size,
                    subprotocols=(SUBPROTOCOL,) if offer else (),
                    extra_headers=headers,
                    ssl_context=self._ssl_context,
                    proxy=self.proxy,
                )
        except TimeoutError:  # only the cancel scope's: the transport wraps socket errors
            raise ConnectTimeout(self.url, self.connect_timeout_s or 0.0) from None

    async def close(self) -> None:
        """End the session: send ``close`` (WS-CLOSE-1), close the WebSocket. Idempotent.

        With the resume extension, a connection that broke since the last request is
        resumed once (within ``CLOSE_WAIT_S``) to deliver ``close``, so the server ends the
        session now rather than keeping it for its grace period.
        """
        if self._closed:
            return
        self._closed = True
        transport = self._transport
        if transport is None:
            return
        with anyio.CancelScope(shield=True):
            if self._dropped is None and transport.ended and self._resumable_after(transport.failure):
                assert self.session is not None
                with anyio.move_on_after(CLOSE_WAIT_S):
                    try:
                        transport = self._transport = await self._attach(self.session.resume_token)
                    except EnvClientError:
                        pass
            if self._dropped is None and not transport.ended:
                # WS-CLOSE-1: after ``close`` the server closes the WebSocket; only a server
                # that does not is sent a close frame of ours.
                transport.expect_close()
                with anyio.move_on_after(CLOSE_WAIT_S):
                    try:
                        await transport.send_text(_CLOSE_TEXT)
                    except EnvClientError:
                        pass
                    else:
                        await transport.wait_ended()
                await transport.close(CloseCode.NORMAL, timeout_s=CLOSE_TIMEOUT_S)
            else:
                await transport.abort()

    def _resumable_after(self, failure: EnvClientError | None) -> bool:
        """Whether the session may be resumed after ``failure`` (extension on, a broken connection)."""
        return (
            self.session is not None
            and self.reconnect_policy is not None
            and failure is not None
            and worth_resuming(failure)
        )

    def sync(self, *, backend: str = "asyncio") -> SyncEnvClient[EnvClient]:
        """A blocking wrapper: ``with EnvClient(url).sync() as env: env.step(...)``.

        The client runs on ``backend`` (``"asyncio"`` or ``"trio"``), on the event-loop thread
        the process's blocking clients of that backend share.
        """
        return SyncEnvClient(self, backend=backend)

    # -- requests ----------------------------------------------------------------------
    #
    # Each request holds the client's turn (requests are serialised: each waits for the one
    # before it), builds its typed frame with the ids the resume extension calls for, and
    # hands it to the base request.

    async def reset(self, **kwargs: Any) -> StepResult:
        """Start a new episode; keyword arguments go to the environment's reset (WS-RESET-1)."""
        async with self._turn:
            frame = await self._request(Reset(kwargs, self._request_id()), Observation)
            if self.session is not None:
                self._episode_id = frame.episode_id  # EXT-EP-2
        return StepResult.of(frame)

    async def step(self, action: Any) -> StepResult:
        """Send one action (a mapping, dataclass or pydantic model) (WS-STEP-1)."""
        action = _action_mapping(action)
        async with self._turn:
            frame = await self._request(Step(action, self._request_id(), self._pinned_episode()), Observation)
        return StepResult.of(frame)

    async def state(self) -> State:
        """The session's current state (WS-STATE-1)."""
        async with self._turn:
            frame = await self._request(StateRequest(), StateFrame)
        data = dict(frame.data)
        episode_id = data.pop("episode_id", None)
        step_count = data.pop("step_count", 0)
        return State(episode_id=episode_id, step_count=step_count, extra=data)

    async def list_tools(self) -> list[Tool]:
        """The environment's tools (``tools/list`` in an ``mcp`` frame, MCP-WS-1)."""
        result = await self._rpc(McpMethod.TOOLS_LIST, {})
        listings = result.get("tools") if isinstance(result, Mapping) else None
        if not isinstance(listings, list) or not all(map(_is_tool_listing, listings)):
            raise ProtocolViolation(self.url, "tools/list answered something other than a list of named tools")
        return [Tool.of(listing) for listing in listings]

    async def call_tool(self, name: str, /, **arguments: Any) -> Any:
        """Call a tool on this session's environment and return its value (``data``).

        A JSON-RPC error raises the :class:`RpcError` subclass of its code:
        :class:`RpcInvalidParams` (unknown tool, bad arguments), :class:`ToolFailed` (the
        tool raised), :class:`RpcMethodNotFound` (the environment has no tools).
        """
        result = await self._rpc(McpMethod.TOOLS_CALL, {"name": name, "arguments": arguments})
        return result.get("data") if isinstance(result, Mapping) else result

    async def validation_open(self, token: str) -> str:
        """Open this session's validation telemetry (``VAL-OPEN-1``), before its first reset,
        with the server's validation token; return the capability that reads it. Telemetry
        records base connections only: make the client with ``reconnect=False``.

        Raises :class:`ValidationRefused` when the server refuses (``VAL-OPEN-2``): telemetry
        off, a wrong token, after the first reset, open already, or a connection that
        negotiated the resume extension. The session goes on.
        """
        async with self._turn:
            frame = await self._request(ValidationOpen(token), ValidationOpened)
        return frame.capability

    async def validation_read(self, capability: str) -> dict[str, Any]:
        """What the server observed of this session (``VAL-READ-1``): ``seed``
        (``{requested, accepted, value}``), ``trajectory`` (the reset, step and state
        exchanges as they went over the wire) and the rest of the ``validation`` frame's data.
        Raises :class:`ValidationRefused` for a capability that is not this session's."""
        async with self._turn:
            frame = await self._request(ValidationRead(capability), Validation)
        return dict(frame.data)

    async def _rpc(self, method: str, params: Mapping[str, Any]) -> Any:
        request_id = next(self._request_numbers)
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}
        async with self._turn:
            frame = await self._request(Mcp(request), Mcp)
        response = frame.data
        if response.get("id") != request_id:
            raise await self._drop(
                ProtocolViolation(self.url, f"the JSON-RPC answer to request {request_id} names {response.get('id')!r}")
            )
        error = response.get("error")
        if error is not None:
            raise RpcError.from_error(error)
        return response.get("result")

    def _usable(self) -> WebSocketTransport:
        if self._dropped is not None and not self._closed:
            raise ConnectionDropped(self.url, self._dropped) from self._dropped
        transport = self._transport
        if transport is None or self._closed:
            raise NotConnected(
                f"{self!r} is " + ("closed" if self._closed else "not open: use `async with EnvClient(url) as env`")
            )
        return transport

    @property
    def _turn(self) -> anyio.Lock:
        """The lock a request holds from building its frame to its answer (checked usable first)."""
        self._usable()
        assert self._lock is not None
        return self._lock

    # -- the base request and the resume layer around it -------------------------------
    #
    # The base request: its frame encoded once (``_encode``) and sent, its answer awaited
    # within ``message_timeout_s`` (``_exchange``), decoded and its request id checked
    # (``_answer``). The resume extension (PROTOCOL.md section 10) sits around the exchange:
    # a connection that breaks in a way resuming may repair is resumed, and the same text
    # (so the same ``request_id``, answered once by the server) is sent again on it.

    async def _request(self, frame: ClientFrame, expect: type[_Answer]) -> _Answer:
        """Send ``frame`` (holding the turn) and return its answer, a frame of ``expect`` (an
        error frame raises :class:`ServerError`)."""
        transport = self._usable()
        text = self._encode(frame)
        while True:
            reply = await self._exchange(transport, text, frame.type)
            if not isinstance(reply, EnvClientError):
                break
            if not self._resumable_after(reply):  # any other failure drops the client
                raise await self._drop(reply) from None
            transport = await self._resume(reply)
        try:
            return self._answer(reply, frame, expect)
        except ProtocolViolation as exc:
            raise await self._drop(exc) from None

    def _encode(self, frame: ClientFrame) -> str:
        """The text of ``frame``; a frame the spec refuses is a ``ValueError``, never sent."""
        wire = frame.to_wire()
        if not self._client_frames.is_valid(wire):
            try:
                self._client_frames.check(wire, what=f"{frame.type} frame")
            except ProtocolError as exc:
                raise ValueError(f"refusing to send an invalid {frame.type} frame: {exc.message}") from None
        return dumps(wire)

    async def _exchange(self, transport: WebSocketTransport, text: str, name: str) -> str | bytes | EnvClientError:
        """Send ``text`` on ``transport`` and return the answer's payload.

        A connection that breaks meanwhile is returned as its error, undropped: the resume
        layer (``_request``) decides what it means. A timeout or a cancellation drops the client (a late
        answer must never reach a later request, WS-ORDER-3).
        """
        early, self._early = self._early or transport.receive_nowait(), None
        if early is not None:  # an unrequested frame: only an error before a close (WS-ORDER-2)
            await self._raise_unrequested(early, name)
        settled = False
        try:
            # Only its deadline cancels this scope, so a caught cancellation is the timeout
            # (not anyio.fail_after: bench/README.md, "Client CPU per step").
            with anyio.move_on_after(self.message_timeout_s) as scope:
                await transport.send_text(text)
                reply = await transport.receive()
            settled = True
        except EnvClientError as exc:
            settled = True
            return exc
        finally:
            if not settled and self._dropped is None:
                await self._drop(EnvClientError(f"a {name} request was cancelled before its answer came"))
        if scope.cancelled_caught:
            raise await self._drop(MessageTimeout(self.url, name, self.message_timeout_s or 0.0)) from None
        return reply

    def _answer(self, reply: str | bytes, request: ClientFrame, expect: type[_Answer]) -> _Answer:
        """The decoded answer to ``request``: a frame of ``expect`` naming the request's id, if
        it has one (EXT-REQ-2). An error frame raises :class:`ServerError`; anything else that
        is no such answer raises :class:`ProtocolViolation`."""
        try:
            frame = decode_server_frame(reply)
        except ProtocolError as exc:
            raise ProtocolViolation(self.url, exc.message, pointer=exc.pointer) from None
        request_id = request.request_id if isinstance(request, (Reset, Step)) else None
        if request_id is not None and isinstance(frame, (Observation, Error)) and frame.request_id != request_id:
            raise ProtocolViolation(self.url, f"the answer to request {request_id} names request {frame.request_id}")
        match frame:
            case Error():
                raise ServerError.from_frame(frame.code, frame.message, frame.extra)
            case Observation() | StateFrame() | Mcp() | ValidationOpened() | Validation() if isinstance(frame, expect):
                return frame
            case Observation() | StateFrame() | Session() | Mcp() | ValidationOpened() | Validation():
                raise ProtocolViolation(self.url, f"a {frame.type} frame answered {request.type}")
            case _:
                assert_never(frame)

    # -- the resume extension's ids (PROTOCOL.md section 10) -------------------------------

    def _request_id(self) -> str | None:
        """A fresh ``request_id`` for a reset or step on a negotiated connection (EXT-REQ-1)."""
        return None if self.session is None else str(next(self._request_numbers))

    def _pinned_episode(self) -> str | None:
        """The episode a step names with ``pin_episode`` on (EXT-EP-1): the last reset's."""
        return self._episode_id if self.pin_episode and self.session is not None else None

    async def _resume(self, cause: EnvClientError) -> WebSocketTransport:
        """Reconnect with the session's token (EXT-RES-1); raises when that is impossible.

        Tries as the reconnect policy says, within its time budget: a try that fails in a
        way a restarting server explains (nothing listening, a close 1012 or 1013, capacity,
        a proxy's 502/503/504: ``retry_resume_after``) is tried again after the policy's
        wait (EXT-HAND-6). An unknown or expired session raises :class:`SessionNotFound`; an
        episode a restarted server could not replay exactly :class:`ReplayMismatch`;
        anything else that stops it :class:`ResumeFailed`. Either way the client is
        dropped: a fresh episode is never substituted.
        """
        policy, session = self.reconnect_policy, self.session
        assert policy is not None and session is not None
        if self._transport is not None:
            await self._abort(self._transport)
        last: BaseException = cause
        started = anyio.current_time()
        attempt = 0
        while (delay := policy.next_delay_s(attempt, anyio.current_time() - started)) is not None:
            attempt += 1
            if delay:
                await anyio.sleep(delay)
            left = policy.time_left_s(anyio.current_time() - started)
            with anyio.move_on_after(max(left, 0.001) if left is not None else None) as budget:
                try:
                    transport = await self._attach(session.resume_token)
                except SessionNotFound as exc:
                    raise await self._drop(exc) from None
                except ProtocolViolation as exc:  # a half-broken connection's garbage: as before, tried again
                    last = exc
                    continue
                except EnvClientError as exc:
                    if retry_resume_after(exc):
                        last = exc
                        continue
                    if isinstance(exc, ServerError) and exc.code == ErrorCode.REPLAY_MISMATCH:
                        raise await self._drop(ReplayMismatch(self.url, exc)) from None
                    raise await self._drop(ResumeFailed(self.url, "the server refused", exc)) from None
            if budget.cancelled_caught:  # the budget ran out during the try
                last = ConnectTimeout(self.url, left or 0.0)
                break
            if transport.subprotocol != SUBPROTOCOL:
                await self._abort(transport)
                raise await self._drop(
                    ResumeFailed(self.url, "the server no longer accepts the resume extension", cause)
                ) from None
            self._transport = transport
            self.resumes += 1
            return transport
        elapsed = anyio.current_time() - started
        raise await self._drop(
            ResumeFailed(self.url, f"{attempt} attempt(s) in {elapsed:.1f} s failed", last)
        ) from None

    async def _raise_unrequested(self, payload: str | bytes, name: str) -> None:
        """A frame arrived before any request: an error preceding a close is raised as such."""
        try:
            frame = decode_server_frame(payload)
        except ProtocolError as exc:
            raise await self._drop(ProtocolViolation(self.url, exc.message, pointer=exc.pointer)) from None
        match frame:
            case Error():
                raise ServerError.from_frame(frame.code, frame.message, frame.extra)
            case Observation() | StateFrame() | Session() | Mcp() | ValidationOpened() | Validation():
                raise await self._drop(ProtocolViolation(self.url, f"an unrequested {frame.type} frame before {name}"))
            case _:
                assert_never(frame)

    async def _drop(self, reason: EnvClientError) -> EnvClientError:
        """Give up the session for good (shielded); later calls raise ConnectionDropped.

        A connection that still works is closed with 1001 (not just cut), so a server
        keeping sessions for resuming frees this one at once (EXT-RES-2): the client will
        never resume it.
        """
        if self._dropped is None:
            self._dropped = reason
        if self._transport is not None:
            with anyio.CancelScope(shield=True):
                await self._transport.leave(reason="client gave the session up")
        return reason


def _is_tool_listing(listing: object) -> bool:
    """A ``tools/list`` entry (MCP-RPC-2): an object with a string name and, if any, an object schema."""
    return (
        isinstance(listing, Mapping)
        and isinstance(listing.get("name"), str)
        and isinstance(listing.get("inputSchema") or {}, Mapping)
    )
