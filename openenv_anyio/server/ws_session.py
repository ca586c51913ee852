"""The ``/ws`` endpoint: one session per connection, as a raw ASGI handler (the lean path).

One task per connection reads a frame, answers it, and reads the next, so answers go out in
request order (``WS-ORDER-1``). Idle time is only the time spent waiting for the next frame:
the idle timeout (``WS-IDLE-1``) and the ping schedule (``WS-PING-1``) are deadlines on that
wait, so a request that is executing is never reaped (``WS-IDLE-2``) and no extra task runs.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import trio

from ..core import (
    Close,
    Error,
    ErrorCode,
    Observation,
    ProtocolError,
    Reset,
    State,
    Step,
    decode_client_frame,
)
from .action_check import relocate
from .bound_env import BoundEnv, FactoryFailure
from .context import AsgiReceive, AsgiSend, ServerContext, log
from .liveness import PingSchedule
from .ui_hub import EpisodeView

__all__ = ["serve_ws", "WsSession"]

CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_INTERNAL = 1011
CLOSE_TRY_AGAIN = 1013
CLOSE_IDLE = 4408


async def close_websocket(send: AsgiSend, code: int, reason: str = "") -> None:
    await send({"type": "websocket.close", "code": code, "reason": reason})


async def serve_ws(ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
    """ASGI handler of one ``/ws`` connection."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})  # no subprotocol selected (WS-CONN-1)
    registry = ctx.registry
    if registry.closing:
        await close_websocket(send, CLOSE_GOING_AWAY, "server shutting down")
        return
    if not registry.try_reserve():  # WS-CAP-1
        active, limit = registry.sessions, registry.max_sessions
        refusal = Error(
            ErrorCode.CAPACITY_REACHED.value,
            f"Server at capacity: {active}/{limit} sessions active. Cannot accept new connections.",
            {"active_sessions": active, "max_sessions": limit},
        )
        await send({"type": "websocket.send", "text": ctx.encode(refusal)})
        await close_websocket(send, CLOSE_TRY_AGAIN, "server at capacity")
        return
    try:
        await WsSession(ctx, receive, send).run()
    finally:
        registry.release()


def _execution_error(exc: BaseException) -> Error:
    return Error(ErrorCode.EXECUTION_ERROR.value, f"{type(exc).__name__}: {exc}")


class WsSession:
    """The state of one ``/ws`` connection while it runs."""

    def __init__(self, ctx: ServerContext, receive: AsgiReceive, send: AsgiSend) -> None:
        self.ctx = ctx
        self.receive = receive
        self.send = send
        self.session_id = uuid.uuid4().hex
        self.view = EpisodeView(self.session_id, ctx.config.action_log_size)
        self.env: BoundEnv | None = None
        self._shutdown = False
        self._wait_scope: trio.CancelScope | None = None

    def request_shutdown(self) -> None:
        """Server shutdown: end at the next wait for a frame (``WS-SHUT-1``)."""
        self._shutdown = True
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    async def run(self) -> None:
        ctx = self.ctx
        try:
            self.env = await BoundEnv.create(ctx.factory, inline=ctx.config.inline)
        except FactoryFailure as failure:  # WS-FACT-1
            log.warning("%s", failure)
            error = Error(ErrorCode.FACTORY_ERROR.value, str(failure), {"factory_name": failure.factory_name})
            await self.send({"type": "websocket.send", "text": ctx.encode(error)})
            await close_websocket(self.send, CLOSE_INTERNAL, "environment could not be created")
            return
        ctx.registry.env_opened()
        ctx.registry.attach(self)
        ctx.hub.add_session(self.view)
        try:
            await self._serve()
        finally:
            ctx.hub.remove_session(self.session_id)
            ctx.registry.detach(self)
            with trio.CancelScope(shield=True):  # WS-CLOSE-2: the env is closed whatever happened
                with trio.move_on_after(ctx.config.shutdown_grace_s):
                    await self.env.aclose()
                ctx.registry.env_closed()

    async def _serve(self) -> None:
        config = self.ctx.config
        receive, send, handle = self.receive, self.send, self._handle
        idle_limit = config.session_timeout_s or math.inf
        pings = PingSchedule(config.ping_interval_s, config.ping_timeout_s)
        idle_deadline = trio.current_time() + idle_limit
        while True:
            with trio.CancelScope(deadline=min(idle_deadline, pings.deadline())) as scope:
                self._wait_scope = scope
                if self._shutdown:
                    scope.cancel()
                message = await receive()
            self._wait_scope = None
            if self._shutdown:
                await close_websocket(send, CLOSE_GOING_AWAY, "server shutting down")
                return
            if scope.cancelled_caught:
                now = trio.current_time()
                if now >= idle_deadline:  # WS-IDLE-1
                    await close_websocket(send, CLOSE_IDLE, f"session idle for {config.session_timeout_s:g} s (session_timeout)")
                    return
                if not await pings.on_deadline(send, now):  # WS-PING-1: the peer is gone
                    log.info("session %s: no pong within %g s, closing", self.session_id, pings.timeout)
                    with trio.move_on_after(1.0):
                        await close_websocket(send, CLOSE_INTERNAL, "ping timeout")
                    return
                continue
            kind = message["type"]
            if kind == "websocket.receive":
                text = message.get("text")
                if not await handle(text if text is not None else message.get("bytes") or b""):
                    return
            elif kind == "websocket.disconnect":
                return
            now = trio.current_time()
            idle_deadline = now + idle_limit
            pings.heard(now)

    async def _reply(self, frame: Any) -> None:
        await self.send({"type": "websocket.send", "text": self.ctx.encode(frame)})

    async def _handle(self, payload: str | bytes) -> bool:
        """Answer one inbound frame; ``False`` when the session ends."""
        try:
            frame = decode_client_frame(payload)
        except ProtocolError as error:
            await self._reply(Error.from_protocol_error(error))
            return True
        env = self.env
        assert env is not None
        kind = type(frame)
        if kind is Step:
            try:
                action = env.check_action(frame.action)  # WS-STEP-2
            except ProtocolError as error:
                await self._reply(Error.from_protocol_error(error))
                return True
            try:
                lifted = await env.step(action)
                text = self.ctx.encode(Observation(lifted.observation, lifted.reward, lifted.done))
            except ProtocolError as error:  # the env refused the action itself (WS-STEP-2)
                if error.code is ErrorCode.VALIDATION_ERROR:
                    error = relocate(error, "/data")
                await self._reply(Error.from_protocol_error(error))
                return True
            except Exception as exc:  # WS-ERR-7
                await self._reply(_execution_error(exc))
                return True
            await self.send({"type": "websocket.send", "text": text})
            view, hub = self.view, self.ctx.hub
            watched = bool(hub.subscribers)
            view.record_step(frame.action, lifted.observation, lifted.reward, lifted.done, log=watched)
            if watched:
                hub.publish(view)
            return True
        if kind is Reset:
            try:
                lifted, state = await env.reset(frame.kwargs)
                text = self.ctx.encode(Observation(lifted.observation, lifted.reward, lifted.done))
            except Exception as exc:
                await self._reply(_execution_error(exc))
                return True
            await self.send({"type": "websocket.send", "text": text})
            if state is None:
                state = {"episode_id": frame.kwargs.get("episode_id"), "step_count": 0}
            episode_id = state.get("episode_id")
            self.view.record_reset(
                episode_id if isinstance(episode_id, str) else None,
                state.get("step_count") if isinstance(state.get("step_count"), int) else 0,
                lifted.observation,
            )
            self.ctx.hub.publish(self.view)
            return True
        if kind is Close:  # WS-CLOSE-1
            await close_websocket(self.send, CLOSE_NORMAL)
            return False
        try:
            text = self.ctx.encode(State(await env.state()))
        except Exception as exc:
            await self._reply(_execution_error(exc))
            return True
        await self.send({"type": "websocket.send", "text": text})
        return True
