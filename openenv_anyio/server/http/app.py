"""The Quart-Trio application: the HTTP endpoints of section 9, ``POST /mcp`` and ``/openapi.json``.

``POST /reset`` and ``POST /step`` are stateless like the reference server's: each builds a
fresh environment, uses it once and closes it (``HTTP-4``). Bodies are checked with the same
schemas as the WebSocket frames; a bad body or action is HTTP 422 ``{"detail": [...]}``.
"""

from __future__ import annotations

from functools import partial
from http import HTTPStatus
from typing import Any

import trio
from quart import Response, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from ...core import ErrorCode, FrameCodec, ProtocolError, Reset, dumps, parse_json
from ...core.openapi import STEP_REQUEST_OPTIONS, openapi_document
from ...core.validation import Validator
from ...environment import web_view
from ...restoration import RestoreWay
from ..access.policy import ACCESS_ROUTE, presented_role
from ..context import AtCapacity, ServerContext, session_limit_lowered
from ..execution.bound_env import EnvironmentAborted, FactoryFailure
from ..execution.error_text import public_error
from ..lifecycle import ServerPhase
from ..mcp.http_route import add_mcp_route
from ..mcp.owners import SessionOwners
from ..memory.http_body import busy_response, parse_request_body
from ..observability.metrics import CONTENT_TYPE, exposition
from ..sessions.kept import KeptSessions
from ..ui.web_page import WEB_VIEW_ROUTE, add_web_routes
from .env_profile import EnvProfile
from .stateless_envs import StatelessEnvs
from .tasks import add_task_routes

__all__ = ["create_app"]


#: what ``GET /`` lists (a newcomer's browser lands there first)
ROOT_ENDPOINTS = {
    "/web": "dashboard and playground (a browser page)",
    "/health": "GET: liveness",
    "/ready": "GET: readiness (503 while starting or draining)",
    "/access": "GET: whether a bearer token is required, and what the presented one grants",
    "/metrics": "GET: Prometheus metrics (operator)",
    "/metadata": "GET: the environment's name, description and version",
    "/schema": "GET: action, observation, reset observation and state JSON Schemas",
    "/ws": "WebSocket: one session per connection (reset, step, state, close)",
    "/ws/ui": "WebSocket: state_update frames of every session (read-only)",
    "/reset": "POST: reset a fresh environment (stateless)",
    "/step": "POST: step a fresh environment (stateless)",
    "/state": "GET: the state of a fresh environment (stateless)",
    "/mcp": "POST, or WebSocket: JSON-RPC tools/list, tools/call and HTTP-created sessions (MCP)",
    "/openapi.json": "GET: OpenAPI 3.1 document of the HTTP surface",
}


#: the stateless routes production mode leaves out (HTTP-10)
_SIMULATION_ROUTES = frozenset({"/reset", "/step", "/state"})


def _json(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status=status, content_type="application/json")


def _body_problem(body: Any) -> dict[str, Any]:
    """What is wrong with a request body that is no object, or a ``POST /step`` body whose
    ``action`` is none, in the ``type`` and ``msg`` upstream's server (pydantic) gives, which
    callers match on."""
    if not isinstance(body, dict):
        msg = "Input should be a valid dictionary or object to extract fields from"
        return {"loc": ["body"], "msg": msg, "type": "model_attributes_type"}
    if "action" not in body:
        return {"loc": ["body", "action"], "msg": "Field required", "type": "missing"}
    return {"loc": ["body", "action"], "msg": "Input should be a valid dictionary", "type": "dict_type"}


def _unprocessable(error: ProtocolError, *, strip: str = "", prefix: tuple[str, ...] = ("body",)) -> Response:
    """422 with pydantic-style ``detail`` entries, locations rebased from ``strip`` to ``prefix``."""
    entries = error.errors or [{"loc": [], "msg": error.message, "type": error.keyword or "value_error"}]
    drop = len([part for part in strip.split("/") if part])
    detail = [
        {
            "loc": [*prefix, *entry.get("loc", [])[drop:]],
            "msg": entry.get("msg", error.message),
            "type": entry.get("type", "value_error"),
        }
        for entry in entries
    ]
    return _json({"detail": detail}, 422)


class _BadBody(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


async def _json_body(ctx: ServerContext, *, default: Any) -> Any:
    """The request's JSON body (``default`` when blank); a body over 1 MiB is held to the
    server's budget of bytes in flight and parsed off the event loop (``SRV-MEM-1``, ``SRV-MEM-2``)."""

    def parse(raw: bytes) -> Any:
        return parse_json(raw) if raw.strip() else default

    try:
        return await parse_request_body(ctx.large_frames, parse)
    except ProtocolError as error:
        if error.code is ErrorCode.SERVER_BUSY:
            raise _BadBody(busy_response(error)) from None
        raise _BadBody(
            _json({"detail": [{"loc": ["body"], "msg": error.message, "type": "json_invalid"}]}, 422)
        ) from None


def _server_error(ctx: ServerContext, exc: BaseException) -> Response:
    """500 saying as much as ``SEC-ERR-1`` allows: never a traceback or a local path."""
    cause = exc.cause if isinstance(exc, (FactoryFailure, EnvironmentAborted)) else exc
    public = public_error(cause, expose=ctx.config.errors_exposed, during=f"{request.method} {request.path}")
    return _json({"detail": public.message, "error_id": public.error_id}, 500)


def create_app(ctx: ServerContext, hosted: KeptSessions, owners: SessionOwners | None = None) -> QuartTrio:
    """The HTTP side of one server."""
    app = QuartTrio("openenv_anyio.server")
    app.config["MAX_CONTENT_LENGTH"] = ctx.config.max_message_bytes
    profile = EnvProfile(ctx)
    codec = FrameCodec("client-frame")
    stateless = StatelessEnvs(ctx)
    step_options = Validator({"type": "object", "properties": dict(STEP_REQUEST_OPTIONS)})

    @app.errorhandler(_BadBody)
    async def bad_body(error: _BadBody) -> Response:
        return error.response

    @app.errorhandler(FactoryFailure)
    async def factory_failed(error: FactoryFailure) -> Response:
        return _server_error(ctx, error)

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException) -> Response:
        """404, 405, ...: JSON in upstream's words (``{"detail": "Not Found"}``), not an HTML page."""
        response = _json({"detail": HTTPStatus(error.code or 500).phrase}, error.code or 500)
        allowed = getattr(error, "valid_methods", None)  # a 405 keeps its Allow header
        if allowed:
            response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.errorhandler(AtCapacity)
    async def at_capacity(error: AtCapacity) -> Response:  # HTTP-6
        response = _json({"detail": str(error), "active_sessions": error.active, "max_sessions": error.limit}, 503)
        response.headers["Retry-After"] = "1"
        return response

    @app.get("/")
    async def root() -> Response:  # not a protocol endpoint: where a browser lands first
        name = (await profile.describe())[0].get("name")
        endpoints = {
            path: what
            for path, what in ROOT_ENDPOINTS.items()
            if not (ctx.config.production and path in _SIMULATION_ROUTES)
        }
        return _json({"name": name, "endpoints": endpoints})

    @app.get("/health")
    async def health() -> Response:  # HTTP-1
        return _json({"status": "healthy"})

    @app.get("/ready")
    async def ready() -> Response:  # HTTP-7
        registry = ctx.registry
        if registry.ready:
            return _json({"status": "ready"})
        if registry.phase is ServerPhase.SERVING:  # SRV-FAULT-3: stuck closes refuse every new session
            return _json({"status": "stuck_closes", "detail": registry.refusal()}, 503)
        return _json({"status": registry.phase.value}, 503)

    @app.get(ACCESS_ROUTE)
    async def access() -> Response:  # SEC-TOKEN-2
        role = presented_role(list(request.scope.get("headers") or ()), ctx.config.access)
        return _json(
            {"tokens_required": ctx.config.access.tokens_required, "role": None if role is None else role.value}
        )

    @app.get("/metrics")
    async def metrics() -> Response:  # HTTP-8
        instruments = ctx.instruments.metrics
        if instruments is None:
            return _json({"detail": "metrics are off (ServerConfig.metrics)"}, 404)
        return Response(exposition(instruments), status=200, content_type=CONTENT_TYPE)

    @app.get("/metadata")
    async def metadata() -> Response:  # HTTP-2
        body = (await profile.describe())[0]
        config = ctx.config
        lowered = session_limit_lowered(ctx.factory, config.max_concurrent_envs)
        if lowered is not None:
            body = {**body, "max_concurrent_envs": lowered}
        if config.session_store is not None:  # EXT-HAND-1: sessions outlive this process
            body = {**body, "handover": {"durable": config.durable}}
            if config.deterministic and body.get("restore") == RestoreWay.NONE.value:
                body["restore"] = RestoreWay.REPLAY.value
        return _json(body)

    @app.get("/schema")
    async def schema() -> Response:  # HTTP-3
        return _json((await profile.describe())[1])

    add_mcp_route(app, ctx, hosted, owners)
    add_task_routes(app, ctx, partial(_json_body, ctx, default=None))  # TASK-1 to TASK-4, both modes
    openapi: list[dict[str, Any]] = []

    @app.get("/openapi.json")
    async def openapi_json() -> Response:  # HTTP-9
        if not openapi:
            metadata, schemas = await profile.describe()
            openapi.append(
                openapi_document(
                    title=str(metadata.get("name")),
                    version=str(metadata.get("version") or "1.0.0"),
                    description=str(metadata.get("description") or ""),
                    env_schemas=schemas,
                    production=ctx.config.production,
                )
            )
        return _json(openapi[0])

    if ctx.config.production:  # HTTP-10: no stateless simulation routes
        return app

    @app.get("/state")
    async def state() -> Response:  # HTTP-5
        async with stateless.open() as env:
            try:
                return _json(await env.state())
            except Exception as exc:
                return _server_error(ctx, exc)

    @app.post("/reset")
    async def reset() -> Response:  # HTTP-4
        body = await _json_body(ctx, default={})
        if not isinstance(body, dict):
            return _json({"detail": [_body_problem(body)]}, 422)
        try:
            frame = codec.decode_value({"type": "reset", "data": body})
        except ProtocolError as error:
            return _unprocessable(error, strip="/data")
        assert isinstance(frame, Reset)
        async with stateless.open() as env:
            try:
                lifted, _ = await env.reset(frame.kwargs)
            except Exception as exc:
                return _server_error(ctx, exc)
        return _json(lifted.frame_data())

    @app.post("/step")
    async def step() -> Response:  # HTTP-4
        body = await _json_body(ctx, default=None)
        if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
            return _json({"detail": [_body_problem(body)]}, 422)
        try:
            step_options.check({key: body[key] for key in STEP_REQUEST_OPTIONS if key in body}, what="step request")
        except ProtocolError as error:
            return _unprocessable(error)
        async with stateless.open() as env:
            try:
                action = env.check_action(body["action"])
            except ProtocolError as error:
                return _unprocessable(error, strip="/data", prefix=("body", "action"))
            try:
                lifted = await env.step(action)
            except ProtocolError as error:  # the env refused the action itself, as over /ws (WS-STEP-2)
                if error.code is not ErrorCode.VALIDATION_ERROR:
                    return _server_error(ctx, error)
                return _unprocessable(error, prefix=("body", "action"))
            except Exception as exc:
                return _server_error(ctx, exc)
        return _json(lifted.frame_data())

    if ctx.config.serves_web:
        add_web_routes(app)
        viewing = trio.Lock()  # one viewing environment at a time, whatever the page sends

        @app.post(WEB_VIEW_ROUTE)
        async def web_view_route() -> Response:  # UI-10: the playground's drawing and one-click actions
            body = await _json_body(ctx, default=None)
            if not isinstance(body, dict) or not isinstance(body.get("observation"), dict):
                missing = {
                    "loc": ["body", "observation"],
                    "msg": "Field required: the data of an observation frame",
                    "type": "missing",
                }
                return _json({"detail": [missing]}, 422)
            if not await profile.web_hooks():
                return _json({"html": None, "actions": []})
            async with viewing, ctx.fresh_env(counted=False) as env:
                try:
                    return _json(await env.runner.run(partial(web_view, env.env, body)))
                except Exception as exc:
                    return _server_error(ctx, exc)

    return app
