"""Answer one JSON-RPC request of the MCP surface, whichever path it came by.

Three paths share this: ``POST /mcp`` (no environment of its own: a request names a hosted
session by ``params.session_id``, or a fresh environment answers and is closed), ``WS /mcp``
and ``mcp`` frames on ``/ws`` (the connection's own environment). Every failure is a JSON-RPC
error response (``MCP-ERR-2``), and a tool's faults follow the rules a step's do:

- an exception is -32603 whose message says what ``expose_errors`` allows (the type and a
  clipped message without paths, or only an id) and whose ``data.error_id`` names the
  server's log entry with the traceback (``SEC-ERR-1``);
- a result no frame can carry (a lone surrogate, a value JSON cannot hold) is the tool's
  fault, answered the same way; the session goes on (``SRV-FAULT-2``);
- a ``BaseException`` such as ``SystemExit`` (:class:`EnvironmentAborted`) is answered, and
  then ends the session (``SRV-FAULT-1``): a connection's, by :class:`SessionAborted` out of
  here (the answer in it, to send before closing), a hosted session's, here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from ...core import McpMethod, RpcCode, RpcFailure, RpcRequest, dumps, rpc_result
from ..config import ServerConfig
from ..context import AtCapacity, log
from ..execution.bound_env import BoundEnv, EnvironmentAborted, EnvironmentLost, FactoryFailure
from ..execution.error_text import printable, public_error
from ..execution.tools import EnvTools
from ..session_registry import SessionRegistry
from ..sessions.answers import RpcDispatch
from ..sessions.kept import KeptSession, KeptSessions, KeptState
from ..ui.hub import EpisodeView

__all__ = ["McpServer", "SessionAborted", "answer_rpc", "session_rpc"]


class McpServer(Protocol):
    """What answering the MCP surface's requests uses of its server."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def registry(self) -> SessionRegistry: ...

    def fresh_env(self, *, counted: bool = True) -> AbstractAsyncContextManager[BoundEnv]:
        """A new environment for one request, closed afterwards (``HTTP-6``: it holds a slot)."""
        ...


class SessionAborted(Exception):
    """The connection's environment aborted while answering (``SRV-FAULT-1``): send
    ``response``, then end the session with ``aborted``'s close code."""

    def __init__(self, response: dict[str, Any], aborted: EnvironmentAborted) -> None:
        super().__init__(str(aborted))
        self.response = response
        self.aborted = aborted


async def answer_rpc(
    ctx: McpServer,
    request: RpcRequest,
    hosted: KeptSessions | None = None,
    *,
    own_env: BoundEnv | None = None,
    own_view: EpisodeView | None = None,
) -> dict[str, Any]:
    """The response object to ``request``; ``hosted``: the sessions created over
    ``POST /mcp`` (that path's requests name them); ``own_env`` and ``own_view``: the
    connection's environment and episode, on the WebSocket paths."""
    try:
        response = rpc_result(request.id, await _dispatch(ctx, _Sessions(hosted), request, own_env, own_view))
        dumps(response)  # SRV-FAULT-2: a result no frame can carry is the tool's fault, answered here
        return response
    except RpcFailure as failure:
        return failure.response(request.id)
    except EnvironmentAborted as exc:  # SRV-FAULT-1
        log.error("MCP %s: %s; ending the session", request.method, exc)
        response = _fault(ctx, request, exc)
        if own_env is not None:
            raise SessionAborted(response, exc) from None
        return response
    except Exception as exc:  # an environment or a tool raised: MCP-ERR-2
        return _fault(ctx, request, exc)


def session_rpc(ctx: McpServer) -> RpcDispatch:
    """The JSON-RPC answers of ``mcp`` frames on ``/ws``, on the session's own environment, as
    the session layer asks them (:data:`~..sessions.answers.RpcDispatch`)."""

    async def answer(
        request: RpcRequest, env: BoundEnv, view: EpisodeView
    ) -> tuple[dict[str, Any], EnvironmentAborted | None]:
        try:
            return await answer_rpc(ctx, request, own_env=env, own_view=view), None
        except SessionAborted as ended:  # SRV-FAULT-1: answered, then the session ends
            return ended.response, ended.aborted

    return answer


def _fault(ctx: McpServer, request: RpcRequest, exc: Exception) -> dict[str, Any]:
    """The -32603 answer for ``exc``, by the rules an ``EXECUTION_ERROR`` follows (``SEC-ERR-1``)."""
    cause = exc.cause if isinstance(exc, EnvironmentAborted) else exc
    expose = ctx.config.errors_exposed or isinstance(exc, EnvironmentLost)  # the server's own words
    public = public_error(cause, expose=expose, during=f"MCP {request.method}")
    data: dict[str, Any] = {"error_id": public.error_id}
    tool = request.params.get("name") if request.method == McpMethod.TOOLS_CALL else None
    message = public.message
    if isinstance(tool, str):
        data["tool"] = tool = printable(tool)
        message = f"Error calling tool {tool!r}: {message}"
    return RpcFailure(RpcCode.INTERNAL_ERROR, message, data).response(request.id)


class _Sessions:
    """The hosted sessions a request may name (none on the WebSocket paths)."""

    def __init__(self, hosted: KeptSessions | None) -> None:
        self._hosted = hosted

    def store(self) -> KeptSessions:
        if self._hosted is None:  # a WebSocket connection is its own session
            raise RpcFailure(RpcCode.METHOD_NOT_FOUND, "hosted sessions are served on POST /mcp")
        return self._hosted


async def _dispatch(
    ctx: McpServer, sessions: _Sessions, request: RpcRequest, own_env: BoundEnv | None, own_view: EpisodeView | None
) -> Any:
    method = request.method
    if method not in McpMethod.__members__.values():
        raise RpcFailure(RpcCode.METHOD_NOT_FOUND, f"Method not found: {method}")
    match McpMethod(method):
        case McpMethod.SESSION_CREATE | McpMethod.SESSION_CLOSE if own_env is not None:
            raise RpcFailure(
                RpcCode.METHOD_NOT_FOUND,
                f"{method} is served on POST /mcp; a WebSocket connection is its own session",
            )
        case McpMethod.SESSION_CREATE:
            return await _create_session(ctx, sessions.store())
        case McpMethod.SESSION_CLOSE:
            hosted = sessions.store()
            session = _hosted(hosted, request)
            closed = await hosted.close(session)
            return {"session_id": session.key, "closed": closed, "closing": not closed}
        case McpMethod.TOOLS_LIST:
            async with _env_for(ctx, sessions, request, own_env, own_view) as (env, _):
                return {"tools": await _tools(env).listing()}
        case McpMethod.TOOLS_CALL:
            arguments = request.params.get("arguments", {})
            async with _env_for(ctx, sessions, request, own_env, own_view) as (env, view):
                _check_episode(request, view)
                return await _tools(env).call(str(request.params["name"]), arguments)


def _tools(env: BoundEnv) -> EnvTools:
    tools = EnvTools(env)
    if not tools.available():
        raise RpcFailure(RpcCode.METHOD_NOT_FOUND, "This environment has no tools")
    return tools


def _hosted(hosted: KeptSessions, request: RpcRequest) -> KeptSession:
    session_id = request.session_id()
    if session_id is None:
        raise RpcFailure(RpcCode.INVALID_PARAMS, "Invalid params: 'session_id' is required")
    session = hosted.find_hosted(session_id)
    if session is None:
        raise RpcFailure(RpcCode.INVALID_PARAMS, "Unknown session_id (never created, closed or expired)")
    session.touch()
    return session


def _check_episode(request: RpcRequest, view: EpisodeView | None) -> None:
    """A call naming an episode runs only in that episode (MCP-SES-6)."""
    expected = request.params.get("episode_id")
    current = view.episode_id if view is not None else None
    if expected is not None and expected != current:
        raise RpcFailure(
            RpcCode.EPISODE_MISMATCH,
            f"the call names episode {expected!r} but the session's current episode is {current!r}; nothing changed",
            {"current_episode_id": current},
        )


@contextlib.asynccontextmanager
async def _env_for(
    ctx: McpServer, sessions: _Sessions, request: RpcRequest, own_env: BoundEnv | None, own_view: EpisodeView | None
) -> AsyncIterator[tuple[BoundEnv, EpisodeView | None]]:
    """The connection's env, the named hosted session's, or a fresh one closed afterwards
    (with the episode it is in; a fresh environment is in none)."""
    if own_env is not None:
        yield own_env, own_view
    elif request.session_id() is not None:
        session = _hosted(sessions.store(), request)
        try:
            yield session.env, session.view
        except EnvironmentAborted:  # SRV-FAULT-1: the session ends (at once, or when its socket closes)
            if session.state is KeptState.WAITING or session.state is KeptState.HELD:
                await sessions.store().close(session)
            raise
        finally:
            session.touch()
    else:
        try:
            async with ctx.fresh_env() as env:
                yield env, None
        except FactoryFailure as failure:
            raise RpcFailure(RpcCode.SERVER_ERROR, str(failure), {"factory_name": failure.factory_name}) from None
        except AtCapacity as full:
            raise RpcFailure(
                RpcCode.SERVER_ERROR, str(full), {"active_sessions": full.active, "max_sessions": full.limit}
            ) from None


async def _create_session(ctx: McpServer, hosted: KeptSessions) -> dict[str, Any]:
    registry = ctx.registry
    if hosted.closed:
        raise RpcFailure(RpcCode.SERVER_ERROR, "The server is shutting down")
    slot = registry.try_reserve()  # WS-CAP-1 applies to hosted sessions too
    if slot is None:
        active = registry.active_sessions
        raise RpcFailure(
            RpcCode.SERVER_ERROR,
            registry.refusal(),
            {"active_sessions": active, "max_sessions": registry.max_sessions},
        )
    try:
        session = await hosted.open_hosted(slot)
    except FactoryFailure as failure:
        slot.release()
        raise RpcFailure(RpcCode.SERVER_ERROR, str(failure), {"factory_name": failure.factory_name}) from None
    except BaseException:
        slot.release()
        raise
    return {"session_id": session.key}
