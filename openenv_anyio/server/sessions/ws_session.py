"""The ``/ws`` endpoint: one session per connection, as a raw ASGI handler (the lean path).

One task per connection reads a frame, answers it, and reads the next, so answers go out in
request order (``WS-ORDER-1``). Idle time is only the time spent waiting for the next frame:
the idle timeout (``WS-IDLE-1``) and the ping schedule (``WS-PING-1``) are deadlines on that
wait, so a request that is executing is never reaped (``WS-IDLE-2``) and no extra task runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, MutableMapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeAlias, assert_never

import trio

from ...core import (
    Close,
    CloseCode,
    Error,
    ErrorCode,
    Mcp,
    Observation,
    ProtocolError,
    Reset,
    State,
    RpcFailure,
    StateRequest,
    Step,
    decode_client_frame,
    encode_frame,
    decode_rpc_request,
)
from ..execution.action_check import relocate
from ..execution.bound_env import BoundEnv, EnvironmentAborted, EnvironmentLost, FactoryFailure
from ..context import AsgiReceive, AsgiSend, ServerContext, log
from ..execution.error_text import public_error
from ..hypercorn_adapter.events import HELD_TEXT, INVALID_TEXT_REPLY, PEER_CLOSE_EVENT, HeldText
from ..memory.large_frames import LARGE_FRAME_CHARS
from ..lifecycle import ServerPhase
from ..observability import peer_of
from ..ping_schedule import PingSchedule
from .registry import Slot
from ..mcp.dispatch import answer_rpc
from ..ui.hub import EpisodeView

if TYPE_CHECKING:
    from ..observability.tracing import SessionTracer

__all__ = [
    "ACCEPT", "GOODBYE_CODES", "Request", "serve_ws", "WsSession", "close_websocket", "refuse_at_capacity",
    "refuse_while_closing",
]

#: Close codes with which a client says "I am done" rather than losing its link (``EXT-RES-2``).
GOODBYE_CODES = frozenset({CloseCode.NORMAL, CloseCode.GOING_AWAY})
#: The answer to a text message that is not UTF-8, sent before the close 1007 (``WS-CLOSE-3``).
INVALID_UTF8_ANSWER: Final = encode_frame(
    Error(ErrorCode.INVALID_JSON.value, "Invalid JSON: the text frame is not valid UTF-8 (WS-CONN-5)")
)
#: The accept message of a ``/ws`` connection (Hypercorn's WebSocket stream reads the extra key).
ACCEPT: Final = {"type": "websocket.accept", INVALID_TEXT_REPLY: INVALID_UTF8_ANSWER}

#: The client frames that are answered (``WS-ORDER-1``, ``MCP-WS-1``); ``close`` is not.
Request: TypeAlias = Reset | Step | StateRequest | Mcp

_perf_counter: Final = time.perf_counter
_INF: Final = math.inf
#: the longest close reason a close frame carries (RFC 6455: 125 bytes of payload, 2 of them the code)
_CLOSE_REASON_MAX: Final = 123


async def close_websocket(send: AsgiSend, code: CloseCode, reason: str = "") -> None:
    await send({"type": "websocket.close", "code": int(code), "reason": reason})


async def serve_session(
    ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend, kind: type[WsSession]
) -> None:
    """Accept a WebSocket, hold a capacity slot for it and run a ``kind`` session on it
    (``/ws``, and ``WS /mcp`` whose sessions speak JSON-RPC)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    accepted_at = _perf_counter()
    await send(ACCEPT)  # no subprotocol selected (WS-CONN-1)
    registry = ctx.registry
    if registry.closing:
        await refuse_while_closing(ctx, scope, send)
        return
    slot = registry.try_reserve()  # WS-CAP-1
    if slot is None:
        await refuse_at_capacity(ctx, scope, send)
        return
    try:
        await kind(ctx, scope, receive, send, slot).run(accepted_at)
    finally:
        slot.release()


async def refuse_while_closing(ctx: ServerContext, scope: dict[str, Any], send: AsgiSend) -> None:
    """A new connection while the server drains: close 1013, try another server
    (``WS-DRAIN-1``); once it is stopping, 1001 (``WS-SHUT-1``)."""
    if ctx.registry.phase is ServerPhase.DRAINING:
        code, reason = CloseCode.TRY_AGAIN_LATER, "server draining"
    else:
        code, reason = CloseCode.GOING_AWAY, "server shutting down"
    ctx.instruments.connection_refused(peer_of(scope), code, reason)
    await close_websocket(send, code, reason)


async def refuse_at_capacity(ctx: ServerContext, scope: dict[str, Any], send: AsgiSend) -> None:
    """``CAPACITY_REACHED`` then close 1013 (``WS-CAP-1``)."""
    registry = ctx.registry
    active, limit = registry.active_sessions, registry.max_sessions
    refusal = Error(
        ErrorCode.CAPACITY_REACHED.value,
        f"Server at capacity: {active}/{limit} sessions active. Cannot accept new connections.",
        {"active_sessions": active, "max_sessions": limit},
    )
    await send({"type": "websocket.send", "text": ctx.encode(refusal)})
    ctx.instruments.connection_refused(peer_of(scope), CloseCode.TRY_AGAIN_LATER, "server at capacity")
    await close_websocket(send, CloseCode.TRY_AGAIN_LATER, "server at capacity")


def _refusal(error: ProtocolError, request_id: str | None) -> Error:
    frame = Error.from_protocol_error(error)
    return frame if request_id is None else replace(frame, request_id=request_id)


class WsSession:
    """The state of one ``/ws`` connection while it runs.

    Its capacity slot is let go the moment the connection is known to end, before the
    closing handshake completes (``WS-CAP-2``): on the peer's close frame as it arrives
    (:meth:`_peer_closed`, called by the connection before it answers), and before the
    server sends a close frame of its own (:meth:`_ending`). Ends for which a subclass keeps
    the session alive (:attr:`_KEEPS_SLOT`) keep the slot.
    """

    #: why the loop stops when asked from outside: (reason, close code, close reason)
    _STOPS = {
        "shutdown": (CloseCode.GOING_AWAY, "server shutting down"),
        "lost": (CloseCode.ENVIRONMENT_LOST, "environment lost"),  # SRV-ISO-2, between requests
    }
    #: ends of the connection after which the session lives on (and holds its slot)
    _KEEPS_SLOT: frozenset[str] = frozenset()

    def __init__(
        self, ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend, slot: Slot
    ) -> None:
        self.ctx = ctx
        self.scope = scope
        self.receive = receive
        self.send = send
        self.slot = slot
        self.peer_close_code: int | None = None
        self.session_id = ctx.new_session_id()
        self.peer = peer_of(scope)
        self.view = EpisodeView(self.session_id, ctx.config.action_log_size)
        self.env: BoundEnv | None = None
        #: the environment aborted (SRV-FAULT-1): after its answer, the session ends
        self.aborted: EnvironmentAborted | None = None
        #: the close code that ended the connection: sent by the server, or by the client
        self.close_code: int = CloseCode.ABNORMAL
        self._stop: str | None = None
        self._wait_scope: trio.CancelScope | None = None
        self._abort_scope: trio.CancelScope | None = None

    @property
    def episode_id(self) -> str | None:
        return self.view.episode_id

    def request_shutdown(self) -> None:
        """Server shutdown: end at the next wait for a frame (``WS-SHUT-1``)."""
        self._request_stop("shutdown")

    def abort(self) -> None:
        """Server stopping: abandon the request being executed and close with 1001."""
        self._request_stop("shutdown")
        if self._abort_scope is not None:
            self._abort_scope.cancel()

    def _ending(self, reason: str) -> None:
        """The connection ends for ``reason``: free the slot unless the session lives on."""
        if reason not in self._KEEPS_SLOT:
            self.slot.release()

    def _peer_closed(self, code: int) -> None:
        """The peer's close frame arrived (the server has not answered it yet)."""
        self.peer_close_code = code
        self._ending(self._disconnect_reason())

    def _disconnect_reason(self) -> str:
        """``goodbye`` for a clean close by the client (1000, 1001), else ``disconnect``."""
        return "goodbye" if self.peer_close_code in GOODBYE_CODES else "disconnect"

    def _request_stop(self, reason: str) -> None:
        if self._stop is None:
            self._stop = reason
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    async def create_env(self) -> BoundEnv | None:
        """The session's environment; ``None`` after telling the client it failed (``WS-FACT-1``)."""
        ctx = self.ctx
        try:
            return await ctx.create_env()
        except FactoryFailure as failure:
            public = public_error(failure.cause, expose=ctx.config.errors_exposed, during="environment creation")
            error = Error(
                ErrorCode.FACTORY_ERROR.value,
                f"Failed to create environment ({failure.factory_name}): {public.message}",
                {"factory_name": failure.factory_name, "error_id": public.error_id},
            )
            await self.send({"type": "websocket.send", "text": ctx.encode(error, session=self)})
            ctx.instruments.connection_refused(self.peer, CloseCode.INTERNAL_ERROR, "environment could not be created")
            await close_websocket(self.send, CloseCode.INTERNAL_ERROR, "environment could not be created")
            return None

    async def watch_peer_close(self) -> None:
        """Have the connection tell :meth:`_peer_closed` of the peer's close frame (served
        as plain ASGI, the connection cannot: the slot is then freed when the session ends)."""
        try:
            await self.send({"type": PEER_CLOSE_EVENT, "callback": self._peer_closed})
        except Exception:  # Hypercorn without the adapter refuses the event
            pass

    async def run(self, accepted_at: float) -> None:
        """Serve the session; ``accepted_at``: the ``perf_counter()`` of the upgrade."""
        ctx = self.ctx
        await self.watch_peer_close()
        self.env = await self.create_env()
        if self.env is None:
            return
        ctx.registry.env_opened()
        ctx.registry.attach(self)
        ctx.hub.add_session(self.view)
        instruments = ctx.instruments
        reason = "error"
        try:
            instruments.session_opened(self, accepted_at, resumable=False)
            reason = await self._serve_traced()
        finally:
            instruments.session_closed(self, self.close_code, reason)
            ctx.hub.remove_session(self.session_id, "shutdown" if ctx.registry.closing else "closed")
            ctx.registry.detach(self)
            await ctx.close_env(self.env, f"session {self.session_id}")  # WS-CLOSE-2

    def span_attributes(self) -> dict[str, Any]:
        """The session span's attributes."""
        attributes: dict[str, Any] = {"openenv.session_id": self.session_id}
        if self.peer is not None:
            attributes["client.address"] = self.peer
        return attributes

    def _serve_traced(self) -> Awaitable[str]:
        """:meth:`_serve`, inside the session's span when tracing, and beside the watch of its
        environment's process when it has one. (Not a coroutine itself otherwise: every
        frame's wait resumes each coroutine above it.)"""
        env = self.env
        if env is not None and env.WATCHED:
            return self._serve_watched(env)
        return self._serve_spanned()

    async def _serve_watched(self, env: BoundEnv) -> str:
        """Serve while a task of the session's watches ``env``: found gone between requests
        (its process died while the session waited for the client), it ends the session
        then, with the close code of a lost environment (``SRV-ISO-2``)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_env, env)
            reason = await self._serve_spanned()
            nursery.cancel_scope.cancel()
        return reason

    async def _watch_env(self, env: BoundEnv) -> None:
        lost = await env.watch_lost()
        if lost is None or self.aborted is not None:
            return
        log.error("session %s: %s; ending the session", self.session_id, lost)
        self.aborted = lost
        self._request_stop("lost")

    def _serve_spanned(self) -> Awaitable[str]:
        if self.ctx.instruments.tracer is None:
            return self._serve()
        return self._serve_in_span(self.ctx.instruments.tracer)

    async def _serve_in_span(self, tracer: SessionTracer) -> str:
        with tracer.session(self.scope.get("headers") or (), self.span_attributes()) as span:
            reason = await self._serve()
            span.set_attribute("openenv.close_code", self.close_code)
            return reason

    async def _serve(self) -> str:
        """Serve frames until the connection ends; return why: ``close``, ``goodbye`` (the
        client closed the WebSocket with 1000 or 1001), ``disconnect`` (any other loss of the
        connection), ``idle``, ``ping`` or a stop reason (``shutdown``, ...). :meth:`abort`
        ends it at once, closing with 1001.

        One coroutine (the loop is not a call of its own): each frame's wait resumes every
        coroutine above it, so the per-frame path stays shallow.

        The wait for a frame is bounded by a cancel scope whose deadline is the idle timeout's
        or the ping schedule's, whichever comes first. One scope serves frame after frame: its
        deadline is set before each wait and lifted (``inf``) while the frame is answered, so
        a request being executed is never cut short by it (``WS-IDLE-2``); a new scope is
        opened only once one has fired (a timeout, a stop). A frame that arrived just as its
        scope fired is answered in the next one. (A scope entered and left per frame cost
        about a fifth of the server's bytecode per step.) A scope opens with its deadline, and
        the deadline is set again only when it moved; the connection's end (a disconnect)
        returns without lifting it: each change of a deadline is a trio bookkeeping of its own."""
        config = self.ctx.config
        receive, send, handle = self.receive, self.send, self._handle
        idle_limit = config.session_timeout_s or math.inf
        pings = PingSchedule(config.ping_interval_s, config.ping_timeout_s)
        idle_deadline = trio.current_time() + idle_limit
        pending: MutableMapping[str, Any] | None = None  # a frame to answer before the next wait
        with trio.CancelScope() as self._abort_scope:
            while True:
                with trio.CancelScope(deadline=_INF if pending is not None else min(idle_deadline, pings.deadline())) as scope:
                    while True:
                        if pending is None:
                            deadline = min(idle_deadline, pings.deadline())
                            if deadline != scope.deadline:
                                scope.deadline = deadline
                            self._wait_scope = scope
                            if self._stop is not None:
                                scope.cancel()
                            message = await receive()
                            self._wait_scope = None
                            if scope.cancel_called:  # it fired as the frame came: answered in the next scope
                                pending = message
                                break
                            kind = message["type"]
                            if kind != "websocket.disconnect" or self._stop is not None:  # a disconnect returns at once
                                scope.deadline = _INF
                        else:
                            message, pending = pending, None
                            kind = message["type"]
                        if self._stop is not None:
                            return await self._stopped(send)
                        if kind == "websocket.receive":
                            text = message.get("text")
                            if text is None:
                                text = message.get(HELD_TEXT) or message.get("bytes") or b""
                            if not await handle(text):
                                return "close"
                        elif kind == "websocket.disconnect":
                            self.close_code = self.peer_close_code or CloseCode.ABNORMAL
                            ended = self._disconnect_reason()
                            self._ending(ended)
                            return ended
                        now = trio.current_time()
                        idle_deadline = now + idle_limit
                        pings.heard(now)
                self._wait_scope = None
                if pending is not None:
                    continue
                if self._stop is not None:
                    return await self._stopped(send)
                if scope.cancelled_caught:
                    now = trio.current_time()
                    if now >= idle_deadline:  # WS-IDLE-1
                        self._ending("idle")
                        self.close_code = CloseCode.IDLE_TIMEOUT
                        await close_websocket(send, CloseCode.IDLE_TIMEOUT, f"session idle for {config.session_timeout_s:g} s (session_timeout)")
                        return "idle"
                    if not await pings.on_deadline(send, now):  # WS-PING-1: the peer is gone
                        log.info("session %s: no pong within %g s, closing", self.session_id, pings.timeout)
                        self._ending("ping")
                        self.close_code = CloseCode.INTERNAL_ERROR
                        with trio.move_on_after(1.0):
                            await close_websocket(send, CloseCode.INTERNAL_ERROR, "ping timeout")
                        return "ping"
        self._abort_scope = None
        self._ending("shutdown")
        self.close_code = CloseCode.GOING_AWAY
        with trio.CancelScope(shield=True), trio.move_on_after(1.0):
            await close_websocket(self.send, CloseCode.GOING_AWAY, "server shutting down")
        return "shutdown"

    async def _stopped(self, send: AsgiSend) -> str:
        """Close for the stop asked from outside (:attr:`_STOPS`); return its reason."""
        stop = self._stop
        assert stop is not None
        code, reason = self._STOPS[stop]
        if stop == "lost" and self.aborted is not None:
            reason = str(self.aborted)[:_CLOSE_REASON_MAX]  # how the process ended
        self._ending(stop)
        self.close_code = code
        await close_websocket(send, code, reason)
        return stop

    async def _reply(self, frame: Any) -> None:
        await self.send({"type": "websocket.send", "text": self.ctx.encode(frame, session=self)})

    async def _handle(self, payload: str | bytes | HeldText) -> bool:
        """Answer one inbound frame; ``False`` when the session ends."""
        started = _perf_counter()
        try:
            if isinstance(payload, HeldText) or len(payload) > LARGE_FRAME_CHARS:
                frame = await self.ctx.large_frames.decode(payload)  # SRV-MEM-2: off the event loop
            else:
                frame = decode_client_frame(payload)
        except ProtocolError as error:
            await self._reply(Error.from_protocol_error(error))
            return True
        match frame:
            case Close():  # WS-CLOSE-1
                self._ending("close")  # WS-CAP-2
                self.close_code = CloseCode.NORMAL
                await close_websocket(self.send, CloseCode.NORMAL)
                return False
            case Step() | Reset() | StateRequest() | Mcp():
                kind = frame.type
                tracer = self.ctx.instruments.tracer
                if tracer is None:
                    text = await self._answer(frame)
                else:
                    with tracer.request(kind, self.request_attributes(frame)):
                        text = await self._answer(frame)
                await self.send({"type": "websocket.send", "text": text})
                self.ctx.instruments.request_done(kind, _perf_counter() - started)
            case _:
                assert_never(frame)
        aborted = self.aborted
        if aborted is not None:  # SRV-FAULT-1, SRV-ISO-2
            self._ending("aborted")
            self.close_code = aborted.close_code
            await close_websocket(self.send, aborted.close_code, aborted.close_reason)
            return False
        return True

    def request_attributes(self, frame: Request) -> dict[str, Any]:
        """A request span's attributes."""
        attributes: dict[str, Any] = {"openenv.session_id": self.session_id}
        if self.view.episode_id is not None:
            attributes["openenv.episode_id"] = self.view.episode_id
        request_id = getattr(frame, "request_id", None)
        if request_id is not None:
            attributes["openenv.request_id"] = request_id
        return attributes

    async def _env_call(self, name: str, call: Any, *args: Any) -> Any:
        """``await call(*args)``, inside an ``env.NAME`` span when tracing."""
        tracer = self.ctx.instruments.tracer
        if tracer is None:
            return await call(*args)
        with tracer.env_call(name):
            return await call(*args)

    def _failure(self, exc: Exception, request_id: str | None = None) -> str:
        """The ``EXECUTION_ERROR`` answer for an environment that raised ``exc`` (``WS-ERR-7``);
        an aborted environment also ends the session after it (``SRV-FAULT-1``)."""
        cause: BaseException = exc
        expose = self.ctx.config.errors_exposed
        if isinstance(exc, EnvironmentAborted):
            self.aborted, cause = exc, exc.cause
            log.error("session %s: %s; ending the session", self.session_id,
                      exc if isinstance(exc, EnvironmentLost) else f"the environment raised {exc}")
            expose = expose or isinstance(exc, EnvironmentLost)  # the server's own words: nothing to hide
        public = public_error(cause, expose=expose, during=f"session {self.session_id}")  # SEC-ERR-1
        error = Error(ErrorCode.EXECUTION_ERROR.value, public.message, {"error_id": public.error_id}, request_id)
        return self.ctx.encode(error, session=self)

    def _answer(self, frame: Request, request_id: str | None = None) -> Awaitable[str]:
        """The text of the answer to a reset, step, state or mcp request (runs the environment).

        ``request_id`` (resume extension) is echoed in the answer (``EXT-REQ-2``). (Returns the
        coroutine that does the work and is not one itself: one frame less per request while
        no dashboard watches.)
        """
        if not self.ctx.hub.dashboards or type(frame) is StateRequest:
            return self._execute(frame, request_id)
        return self._answer_watched(frame, request_id)

    async def _answer_watched(self, frame: Request, request_id: str | None) -> str:
        """:meth:`_answer` while dashboards watch: they see the request start and end (``UI-7``)."""
        hub = self.ctx.hub
        view = self.view
        view.set_status(busy=True)
        hub.publish_status(view)
        try:
            return await self._execute(frame, request_id)
        finally:
            if view.busy:  # it ended without recording a reset or step
                view.set_status(busy=False)
                hub.publish_status(view)

    def _execute(self, frame: Request, request_id: str | None) -> Awaitable[str]:
        """:meth:`_answer`'s work: run the request on the environment, encode the answer.
        (It picks the coroutine that does it and is not one itself: one frame less per step.)"""
        match frame:
            case Step():
                return self._answer_step(frame, request_id)
            case Reset():
                return self._answer_reset(frame, request_id)
            case StateRequest():
                return self._answer_state()
            case Mcp():
                return self._answer_mcp(frame)
            case _:
                assert_never(frame)

    async def _answer_mcp(self, frame: Mcp) -> str:
        """The JSON-RPC answer in an ``mcp`` frame, whatever happens (``MCP-WS-1``, ``MCP-WS-2``)."""
        try:
            rpc = decode_rpc_request(frame.data)
        except RpcFailure as failure:
            return self.ctx.encode(Mcp(failure.response()))
        return self.ctx.encode(Mcp(await answer_rpc(self.ctx, rpc, own_env=self.env, own_view=self.view)))

    async def _answer_step(self, frame: Step, request_id: str | None) -> str:
        env = self.env
        assert env is not None
        ctx = self.ctx
        encode = ctx.encode
        try:
            action = env.check_action(frame.action)  # WS-STEP-2
        except ProtocolError as error:
            return encode(_refusal(error, request_id), session=self)
        try:
            started = _perf_counter()
            if ctx.instruments.tracer is None:
                lifted = await env.step(action)
            else:
                lifted = await self._env_call("step", env.step, action)
            elapsed = _perf_counter() - started
            text = encode(Observation(lifted.observation, lifted.reward, lifted.done, request_id, None, lifted.sent_metadata))
        except ProtocolError as error:  # the env refused the action itself (WS-STEP-2)
            if error.code is ErrorCode.VALIDATION_ERROR:
                error = relocate(error, "/data")
            return encode(_refusal(error, request_id), session=self)
        except Exception as exc:  # WS-ERR-7
            return self._failure(exc, request_id)
        ctx.instruments.step_done(elapsed)
        view, hub = self.view, ctx.hub
        watched = bool(hub.subscribers)
        view.record_step(frame.action, lifted.observation, lifted.reward, lifted.done, log=watched)
        if watched:
            hub.publish(view)
        return text

    async def _answer_reset(self, frame: Reset, request_id: str | None) -> str:
        env = self.env
        assert env is not None
        encode = self.ctx.encode
        try:
            lifted, state = await self._env_call("reset", env.reset, frame.kwargs)
            if state is None:
                state = {"episode_id": frame.kwargs.get("episode_id"), "step_count": 0}
            episode_id = state.get("episode_id")
            episode_id = episode_id if isinstance(episode_id, str) else None
            text = encode(
                Observation(
                    lifted.observation,
                    lifted.reward,
                    lifted.done,
                    request_id,
                    episode_id if request_id is not None else None,  # EXT-EP-2
                    lifted.sent_metadata,
                )
            )
        except Exception as exc:
            return self._failure(exc, request_id)
        step_count = state.get("step_count")
        self.view.record_reset(
            episode_id, step_count if isinstance(step_count, int) else 0, lifted.observation, lifted.reward, lifted.done
        )
        self.ctx.instruments.reset_done()
        self.ctx.instruments.episode_reset(self, request_id)
        self.ctx.hub.publish(self.view)
        return text

    async def _answer_state(self) -> str:
        env = self.env
        assert env is not None
        encode = self.ctx.encode
        try:
            return encode(State(await self._env_call("state", env.state)))
        except Exception as exc:
            return self._failure(exc)


#: ASGI handler of one ``/ws`` connection (a partial, not a coroutine of its own: each
#: frame's wait resumes every coroutine above the session's loop).
serve_ws: Final = partial(serve_session, kind=WsSession)
