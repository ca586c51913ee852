"""The answers of the base protocol: a reset, step, state or mcp request run on a session's
environment and put into the text of the frame that answers it.

:class:`Answers` is what a frame handler asks; :class:`EnvAnswers` runs the requests
(``WS-STEP-2``, ``WS-ERR-7``, ``SRV-FAULT-1``, ``UI-7``); the resume extension's
at-most-once layer (:mod:`.resumable`) wraps it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol, TypeAlias, assert_never

from ...core import (
    Error,
    ErrorCode,
    Frame,
    Mcp,
    Observation,
    ProtocolError,
    Reset,
    RpcFailure,
    RpcRequest,
    State,
    StateRequest,
    Step,
    decode_rpc_request,
)
from ..config import ServerConfig
from ..execution.action_check import relocate
from ..execution.bound_env import BoundEnv
from ..execution.error_text import public_error
from ..execution.faults import EnvironmentAborted, EnvironmentLost
from ..observability import Instruments
from ..observability.events import SessionIdentity as Identity
from ..ui.hub import EpisodeView, UiHub
from .session import SessionIdentity

log = logging.getLogger("openenv_anyio.server")

__all__ = ["AnswerServer", "Answers", "EnvAnswers", "Request", "RpcDispatch"]

#: The client frames that are answered (``WS-ORDER-1``, ``MCP-WS-1``); ``close`` is not.
Request: TypeAlias = Reset | Step | StateRequest | Mcp


#: Answers a JSON-RPC request on a session's own environment and episode (the MCP surface,
#: handed to the session layer by the server as its stores are): the response, and the
#: environment's abort when it aborted while answering (``SRV-FAULT-1``: the session ends
#: once the response is sent).
RpcDispatch: TypeAlias = Callable[
    [RpcRequest, BoundEnv, EpisodeView], Awaitable[tuple[dict[str, Any], EnvironmentAborted | None]]
]


class AnswerServer(Protocol):
    """What answering a session's requests uses of its server."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def hub(self) -> UiHub: ...

    @property
    def instruments(self) -> Instruments: ...

    def encode(self, frame: Frame, *, session: Identity | None = None) -> str:
        """The frame's text, checked as the server checks what it sends (an error frame
        counted and logged with ``session``'s identity)."""
        ...


class Answers(Protocol):
    """Answers a session's requests."""

    async def answer(self, frame: Request, request_id: str | None = None) -> str:
        """The text of the answer to ``frame``; ``request_id`` (resume extension) is echoed
        in it (``EXT-REQ-2``)."""
        ...

    @property
    def aborted(self) -> EnvironmentAborted | None:
        """The environment aborted while answering (``SRV-FAULT-1``)."""
        ...


def _refusal(error: ProtocolError, request_id: str | None) -> Error:
    frame = Error.from_protocol_error(error)
    return frame if request_id is None else replace(frame, request_id=request_id)


class EnvAnswers:
    """The requests of one session's connection, run on its environment."""

    def __init__(self, ctx: AnswerServer, identity: SessionIdentity, env: BoundEnv, rpc: RpcDispatch) -> None:
        self.ctx = ctx
        self.identity = identity
        self.env = env
        self.rpc = rpc
        self.view = identity.view
        self.aborted: EnvironmentAborted | None = None

    async def answer(self, frame: Request, request_id: str | None = None) -> str:
        """Run the request on the environment and encode its answer. While dashboards watch,
        they see a reset or step start and end (``UI-7``)."""
        watched = bool(self.ctx.hub.dashboards) and type(frame) is not StateRequest
        if watched:
            self._show_busy(True)
        try:
            match frame:
                case Step():
                    return await self._step(frame, request_id)
                case Reset():
                    return await self._reset(frame, request_id)
                case StateRequest():
                    return await self._state()
                case Mcp():
                    return await self._mcp(frame)
                case _:
                    assert_never(frame)
        finally:
            if watched and self.view.busy:  # it ended without recording a reset or step
                self._show_busy(False)

    def _show_busy(self, busy: bool) -> None:
        self.view.set_status(busy=busy)
        self.ctx.hub.publish_status(self.view)

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
        session_id = self.identity.session_id
        if isinstance(exc, EnvironmentAborted):
            self.aborted, cause = exc, exc.cause
            log.error(
                "session %s: %s; ending the session",
                session_id,
                exc if isinstance(exc, EnvironmentLost) else f"the environment raised {exc}",
            )
            expose = expose or isinstance(exc, EnvironmentLost)  # the server's own words: nothing to hide
        public = public_error(cause, expose=expose, during=f"session {session_id}")  # SEC-ERR-1
        error = Error(ErrorCode.EXECUTION_ERROR.value, public.message, {"error_id": public.error_id}, request_id)
        return self.ctx.encode(error, session=self.identity)

    async def _mcp(self, frame: Mcp) -> str:
        """The JSON-RPC answer in an ``mcp`` frame, whatever happens (``MCP-WS-1``, ``MCP-WS-2``)."""
        try:
            rpc = decode_rpc_request(frame.data)
        except RpcFailure as failure:
            return self.ctx.encode(Mcp(failure.response()))
        response, aborted = await self.rpc(rpc, self.env, self.view)
        if aborted is not None:  # SRV-FAULT-1: answered, then the session ends
            self.aborted = aborted
        return self.ctx.encode(Mcp(response))

    async def _step(self, frame: Step, request_id: str | None) -> str:
        env, ctx = self.env, self.ctx
        encode = ctx.encode
        try:
            action = env.check_action(frame.action)  # WS-STEP-2
        except ProtocolError as error:
            return encode(_refusal(error, request_id), session=self.identity)
        try:
            started = time.perf_counter()
            if ctx.instruments.tracer is None:  # no span: one coroutine less (bench/README.md, "Server CPU per step")
                lifted = await env.step(action)
            else:
                lifted = await self._env_call("step", env.step, action)
            elapsed = time.perf_counter() - started
            text = encode(
                Observation(lifted.observation, lifted.reward, lifted.done, request_id, None, lifted.sent_metadata)
            )
        except ProtocolError as error:  # the env refused the action itself (WS-STEP-2)
            if error.code is ErrorCode.VALIDATION_ERROR:
                error = relocate(error, "/data")
            return encode(_refusal(error, request_id), session=self.identity)
        except Exception as exc:  # WS-ERR-7
            return self._failure(exc, request_id)
        ctx.instruments.step_done(elapsed)
        view, hub = self.view, ctx.hub
        watched = bool(hub.subscribers)
        view.record_step(frame.action, lifted.observation, lifted.reward, lifted.done, log=watched)
        if watched:
            hub.publish(view)
        return text

    async def _reset(self, frame: Reset, request_id: str | None) -> str:
        env, ctx = self.env, self.ctx
        try:
            lifted, state = await self._env_call("reset", env.reset, frame.kwargs)
            if state is None:
                state = {"episode_id": frame.kwargs.get("episode_id"), "step_count": 0}
            episode_id = state.get("episode_id")
            episode_id = episode_id if isinstance(episode_id, str) else None
            text = ctx.encode(
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
        ctx.instruments.reset_done()
        ctx.instruments.episode_reset(self.identity, request_id)
        ctx.hub.publish(self.view)
        return text

    async def _state(self) -> str:
        try:
            return self.ctx.encode(State(await self._env_call("state", self.env.state)))
        except Exception as exc:
            return self._failure(exc)
