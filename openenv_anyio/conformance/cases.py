"""The conformance cases: each a stable ID, a title, the PROTOCOL.md requirements it checks,
whether it is required, and a coroutine that drives the server through a :class:`CaseContext`.

Case IDs never change meaning; new checks get new IDs. ``SCHEMA-01`` is synthetic and runs
last: it checks every frame the server sent during the run against the spec.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from ..core import RESUME_TOKEN_HEADER, SUBPROTOCOL, CloseCode, Validator, dumps, spec_validator
from .context import (
    CaseContext,
    CheckOptions,
    check_data_shape,
    expect_alive,
    expect_error,
    expect_frame,
    expect_observation,
    expect_state,
    receive_within,
)
from .driver import HandshakeRejected, ServerClosed, WsConnection, open_ws
from .evidence import Received, preview
from .handover import HANDOVER_REQUIREMENTS, restart_hands_over
from .vectors import client_error_vectors, default_examples_dir
from .verdicts import CaseFailed, NotApplicable

__all__ = ["CASES", "Case", "select_cases"]

CaseBody = Callable[[CaseContext], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case."""

    id: str
    title: str
    requirements: tuple[str, ...]
    required: bool
    run: CaseBody
    #: judges only what the run recorded (no traffic): it still runs after the server stopped answering
    offline: bool = False
    #: the case's time limit beyond the per-case timeout (a restart it waits for), from the options
    extra_time: Callable[[CheckOptions], float] | None = None

    def timeout_s(self, options: CheckOptions) -> float:
        """The case's time limit: the per-case timeout, plus its extra time if any."""
        return options.timeout_s + (self.extra_time(options) if self.extra_time is not None else 0.0)

    @property
    def group(self) -> str:
        return self.id.rsplit("-", 1)[0]


_registry: list[Case] = []


def case(
    case_id: str,
    title: str,
    requirements: tuple[str, ...],
    *,
    required: bool = True,
    offline: bool = False,
    extra_time: Callable[[CheckOptions], float] | None = None,
) -> Callable[[CaseBody], CaseBody]:
    """Register the decorated coroutine as a case (in definition order)."""

    def register(body: CaseBody) -> CaseBody:
        _registry.append(Case(case_id, title, requirements, required, body, offline, extra_time))
        return body

    return register


def _episode(case_id: str) -> str:
    return f"conformance-{case_id.lower()}"


ENV_KEEPS_NO_EPISODE = (
    "the environment does not record the episode_id given to reset (state reports {seen!r}): "
    "the session's liveness is judged by `state` answering, not by its episode"
)
ENV_KEEPS_NO_EPISODE_ORDER = (
    "the environment does not record the episode_id given to reset (state reports {seen!r}): "
    "the order of the answers is judged by their types, not by their episodes"
)


async def _reset(ctx: CaseContext, conn: WsConnection, episode_id: str) -> str | None:
    """Reset with ``episode_id``; return it when ``state`` then reports it, else ``None``.

    The answer is the episode to look for when checking that the session survived something
    (:func:`expect_alive`). An environment that keeps no episode id (``WS-RESET-3`` is
    checked by ``WS-RESET-03``) is a note about the environment, not a dead session.
    """
    seen = await _reset_reported(conn, episode_id)
    if seen == episode_id:
        return episode_id
    ctx.note(ENV_KEEPS_NO_EPISODE.format(seen=seen))
    return None


async def _reset_reported(conn: WsConnection, episode_id: str) -> Any:
    """Reset with ``episode_id``; the episode id ``state`` then reports (the environment's own
    when it ignores the one given)."""
    await expect_observation(conn, {"type": "reset", "data": {"episode_id": episode_id}}, "reset")
    return (await expect_state(conn, "state after reset")).get("episode_id")


# --- connection ------------------------------------------------------------------------


@case("WS-CONN-01", "handshake on /ws without a subprotocol; the session answers", ("WS-CONN-1", "WS-CONN-3"))
async def _handshake(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        if conn.subprotocol is not None:
            raise CaseFailed(f"the server selected subprotocol {conn.subprotocol!r}, which was not offered")
        await expect_state(conn, "state on a new connection")


# --- reset -----------------------------------------------------------------------------


@case("WS-RESET-01", "reset without data answers an observation", ("WS-RESET-1", "WS-OBS-1"))
async def _reset_bare(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        await expect_observation(conn, {"type": "reset"}, "reset without data")


@case("WS-RESET-02", "reset with data (seed) answers an observation", ("WS-RESET-1", "WS-RESET-2", "WS-OBS-1"))
async def _reset_seed(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        await expect_observation(conn, {"type": "reset", "data": {"seed": 1}}, "reset with seed 1")


@case("WS-RESET-03", "seed and episode_id given to reset are reflected in state", ("WS-RESET-3", "WS-STATE-1"))
async def _reset_reflected(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        for round_, episode_id in enumerate(("conformance-ep-1", "conformance-ep-2")):
            reset = {"type": "reset", "data": {"seed": 5 + round_, "episode_id": episode_id}}
            await expect_observation(conn, reset, f"reset with episode_id {episode_id!r}")
            state = await expect_state(conn, "state after reset")
            if state.get("episode_id") != episode_id or state.get("step_count") != 0:
                raise CaseFailed(
                    f"after reset with episode_id {episode_id!r} the state is episode_id "
                    f"{state.get('episode_id')!r}, step_count {state.get('step_count')!r} "
                    f"(expected {episode_id!r}, 0; the server relays the environment's state: "
                    "an environment that keeps no episode id or step count fails here)"
                )
            if round_ == 0 and ctx.setup.action is not None:
                await expect_observation(conn, {"type": "step", "data": ctx.setup.action}, "step")


@case("WS-RESET-04", "a negative seed is refused with VALIDATION_ERROR", ("WS-RESET-2", "WS-ERR-4"), required=False)
async def _reset_negative_seed(ctx: CaseContext) -> None:
    await _error_then_alive(ctx, "WS-RESET-04", '{"type":"reset","data":{"seed":-1}}', "VALIDATION_ERROR")


# --- step and state --------------------------------------------------------------------


@case("WS-STEP-01", "step with a valid action answers an observation", ("WS-STEP-1", "WS-OBS-1"))
async def _step_valid(ctx: CaseContext) -> None:
    action = ctx.require_action()
    async with ctx.ws() as conn:
        await _reset(ctx, conn, _episode("WS-STEP-01"))
        await expect_observation(conn, {"type": "step", "data": action}, "step with a valid action")
        state = await expect_state(conn, "state after step")
        if state.get("step_count") != 1:
            ctx.note(f"step_count after one step is {state.get('step_count')!r} (environment-defined)")


@case("WS-STEP-02", "an invalid action is refused with VALIDATION_ERROR and its errors", ("WS-STEP-2", "WS-ERR-8"))
async def _step_invalid(ctx: CaseContext) -> None:
    if ctx.setup.invalid_action is None:
        raise NotApplicable(ctx.setup.schema_problem or "cannot build an action the action schema refuses")
    async with ctx.ws() as conn:
        episode_id = await _reset(ctx, conn, _episode("WS-STEP-02"))
        reply = await conn.request({"type": "step", "data": ctx.setup.invalid_action})
        data = expect_error(reply, "VALIDATION_ERROR", "step with an invalid action")
        errors = data.get("errors")
        if not isinstance(errors, list) or not errors:
            raise CaseFailed("the VALIDATION_ERROR frame has no `errors` list saying where and why")
        if not all(isinstance(e, Mapping) and "pointer" in e and "loc" in e for e in errors):
            ctx.non_strict("`errors` entries lack a JSON `pointer` or a `loc` path (openenv-core gives `loc` only)")
        await expect_alive(conn, "an invalid action", episode_id)


@case("WS-STATE-01", "state answers episode_id and step_count, before and after reset", ("WS-STATE-1", "WS-RESET-3"))
async def _state_shape(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        await expect_state(conn, "state before any reset")
        await expect_observation(conn, {"type": "reset"}, "reset without data")
        state = await expect_state(conn, "state after reset")
        if not isinstance(state.get("episode_id"), str):
            raise CaseFailed(
                f"after a reset without episode_id the server chose none: {state.get('episode_id')!r} "
                "(the server relays the environment's state: an environment that keeps no episode id fails here)"
            )


# --- ordering --------------------------------------------------------------------------


@case("WS-ORDER-01", "pipelined requests get one answer each, in order", ("WS-ORDER-1", "WS-ORDER-2"))
async def _pipelined(ctx: CaseContext) -> None:
    requests: list[tuple[Any, str, str | None]] = [
        ({"type": "reset", "data": {"episode_id": "conformance-order-1"}}, "observation", None),
        ({"type": "state"}, "state", "conformance-order-1"),
    ]
    if ctx.setup.action is not None:
        requests.append(({"type": "step", "data": ctx.setup.action}, "observation", None))
    else:
        ctx.note("no valid action: the pipeline has no step")
    requests += [
        ({"type": "conformance_bogus"}, "error", None),
        ({"type": "reset", "data": {"episode_id": "conformance-order-2"}}, "observation", None),
        ({"type": "state"}, "state", "conformance-order-2"),
        ({"type": "state"}, "state", "conformance-order-2"),
    ]
    named = {episode_id for _, _, episode_id in requests if episode_id is not None}
    async with ctx.ws() as conn:
        for request, _, _ in requests:
            await conn.send_json(request)
        for index, (request, expected_type, episode_id) in enumerate(requests, 1):
            what = f"answer {index} of {len(requests)} (to {request['type']})"
            data = expect_frame(await conn.receive(), expected_type, what)
            seen = data.get("episode_id")
            if episode_id is None or seen == episode_id:
                continue
            if seen in named:  # the state of the other reset: answered out of order
                raise CaseFailed(f"{what}: episode_id {seen!r}, expected {episode_id!r}")
            note = ENV_KEEPS_NO_EPISODE_ORDER.format(seen=seen)
            if note not in ctx.notes:
                ctx.note(note)
        extra = await receive_within(conn, min(0.2, ctx.wait_s))
        if extra is not None:
            raise CaseFailed(f"an extra frame after the last answer: {extra.describe()}")


# --- errors ----------------------------------------------------------------------------


async def _error_then_alive(ctx: CaseContext, case_id: str, payload: str | bytes, code: str) -> None:
    """Send ``payload`` inside a session, expect ``code``, then expect the session to go on."""
    shown = "a binary frame" if isinstance(payload, bytes) else repr(payload[:60])
    problems: list[str] = []
    async with ctx.ws() as conn:
        episode_id = await _reset(ctx, conn, _episode(case_id))
        if isinstance(payload, bytes):
            await conn.send_binary(payload)
        else:
            await conn.send_text(payload)
        try:
            reply = await conn.receive()
        except ServerClosed as closed:
            raise CaseFailed(f"{closed} instead of answering {shown} with {code}") from None
        try:
            expect_error(reply, code, f"the answer to {shown}")
        except CaseFailed as failed:
            problems.append(str(failed))
        try:
            # a request that was not refused may legitimately have changed the episode
            await expect_alive(conn, shown, episode_id if reply.type == "error" else None)
        except CaseFailed as failed:
            problems.append(str(failed))
    if problems:
        raise CaseFailed("; ".join(problems))


def _error_case(case_id: str, title: str, requirements: tuple[str, ...], payload: str | bytes, code: str) -> None:
    async def body(ctx: CaseContext) -> None:
        await _error_then_alive(ctx, case_id, payload, code)

    case(case_id, title, requirements)(body)


_error_case(
    "WS-ERR-01",
    "invalid JSON -> INVALID_JSON, session continues",
    ("WS-ERR-1", "WS-ERR-9"),
    "{not json",
    "INVALID_JSON",
)
_error_case(
    "WS-ERR-02",
    "non-object JSON -> VALIDATION_ERROR, session continues",
    ("WS-ERR-2", "WS-ERR-9"),
    "[1, 2]",
    "VALIDATION_ERROR",
)
_error_case(
    "WS-ERR-03",
    "frame without type -> UNKNOWN_TYPE, session continues",
    ("WS-ERR-3", "WS-ERR-9"),
    '{"data": {}}',
    "UNKNOWN_TYPE",
)
_error_case(
    "WS-ERR-04",
    "unknown type -> UNKNOWN_TYPE, session continues",
    ("WS-ERR-3", "WS-ERR-9"),
    '{"type": "conformance_bogus"}',
    "UNKNOWN_TYPE",
)
_error_case(
    "WS-ERR-05",
    "extra top-level key -> VALIDATION_ERROR, session continues",
    ("WS-CONN-4", "WS-ERR-4", "WS-ERR-9"),
    '{"type": "state", "conformance_extra": 1}',
    "VALIDATION_ERROR",
)
_error_case(
    "WS-ERR-06",
    "step without data -> VALIDATION_ERROR, session continues",
    ("WS-ERR-4", "WS-ERR-9"),
    '{"type": "step"}',
    "VALIDATION_ERROR",
)
_error_case(
    "WS-ERR-07",
    "binary frame -> INVALID_JSON, session continues",
    ("WS-ERR-5", "WS-ERR-9"),
    b'{"type": "state"}',
    "INVALID_JSON",
)


@case("WS-ERR-08", "a frame just over the inbound limit -> close 1009", ("WS-ERR-6",))
async def _oversize(ctx: CaseContext) -> None:
    limit = ctx.setup.frame_limit_bytes
    if limit is None:
        raise NotApplicable(
            "pass --frame-limit-mb MB (the server's inbound limit, 100 by default per WS-ERR-6) "
            "to send a frame of MB MiB + 1 byte"
        )
    head, tail = '{"type": "state", "pad": "', '"}'
    payload = head + "a" * max(0, limit + 1 - len(head) - len(tail)) + tail
    async with ctx.ws() as conn:
        try:
            await conn.send_text(payload)
            reply = await conn.receive()
        except ServerClosed as closed:
            if closed.code == CloseCode.ABNORMAL:
                # The server may well have sent 1009 and closed at once: a peer still sending
                # then gets a TCP reset, and the reset discards the unread close frame.
                ctx.non_strict(
                    f"a {len(payload)}-byte frame: the connection was reset before a close code "
                    "could be read (1009 expected; a server that closes without waiting may cause this)"
                )
                return
            if closed.code != CloseCode.MESSAGE_TOO_BIG:
                raise CaseFailed(f"a {len(payload)}-byte frame: {closed}, expected code 1009") from None
            return
        raise CaseFailed(f"a {len(payload)}-byte frame was answered ({reply.describe()}) instead of close 1009")


# --- close, isolation, capacity --------------------------------------------------------


@case("WS-CLOSE-01", "close -> no answer, close code 1000", ("WS-CLOSE-1",))
async def _close(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        await _reset(ctx, conn, _episode("WS-CLOSE-01"))
        await conn.send_json({"type": "close"})
        frames, closed = await conn.wait_closed()
        if frames:
            raise CaseFailed(f"the server answered close with {frames[0].describe()}")
        if closed.code != CloseCode.NORMAL:
            raise CaseFailed(f"after close: {closed}, expected code 1000")


@case("WS-CONN-02", "two connections are isolated sessions", ("WS-CONN-2",))
async def _isolation(ctx: CaseContext) -> None:
    async with contextlib.AsyncExitStack() as stack:
        first = await _occupy_slot(ctx, stack, "connection A")
        second = await _occupy_slot(ctx, stack, "connection B", needs_second_session=True)
        kept_a = await _reset(ctx, first, "conformance-iso-a")
        kept_b = await _reset(ctx, second, "conformance-iso-b")
        if ctx.setup.action is not None:
            await expect_observation(first, {"type": "step", "data": ctx.setup.action}, "step on connection A")
        state_b = await expect_state(second, "state on connection B")
        state_a = await expect_state(first, "state on connection A")
        if kept_a and kept_b and (state_a.get("episode_id") != kept_a or state_b.get("episode_id") != kept_b):
            raise CaseFailed(
                f"sessions are not isolated: A reports episode {state_a.get('episode_id')!r} (expected "
                f"'conformance-iso-a'), B reports {state_b.get('episode_id')!r} (expected 'conformance-iso-b')"
            )
        if state_b.get("step_count") != 0:
            raise CaseFailed(f"a step on A changed B: B's step_count is {state_b.get('step_count')!r}, expected 0")


async def _occupy_slot(
    ctx: CaseContext, stack: contextlib.AsyncExitStack, what: str, *, needs_second_session: bool = False
) -> WsConnection:
    """Open a session that stays open (until ``stack`` closes) and return its connection; a
    slot an earlier case's session still holds is retried until ``ctx.wait_s`` (servers free
    slots after the close handshake, not before).

    ``needs_second_session``: another session of this case is open. A server that admits one
    session at a time (its CAPACITY_REACHED says ``max_sessions`` 1, or ``--max-sessions 1``)
    makes the case not applicable rather than failed; ``--max-sessions N`` (N >= 2) is how to
    demand more.
    """
    if needs_second_session and ctx.setup.max_sessions == 1:
        raise NotApplicable(_ONE_SESSION.format(how="--max-sessions 1"))
    deadline = trio.current_time() + ctx.wait_s
    while True:
        async with contextlib.AsyncExitStack() as attempt:
            conn = await attempt.enter_async_context(ctx.ws())
            try:
                reply = await conn.request({"type": "state"})
            except ServerClosed as closed:  # refused and closed before our request went out
                frames, _ = await conn.wait_closed()  # the frames that came before the close
                if not frames:
                    raise CaseFailed(f"state on {what}: {closed}") from None
                reply = frames[0]
            data = reply.data if reply.type == "error" and isinstance(reply.data, Mapping) else {}
            busy = data.get("code") == "CAPACITY_REACHED"
            if busy and needs_second_session and data.get("max_sessions") == 1 and ctx.setup.max_sessions is None:
                raise NotApplicable(_ONE_SESSION.format(how="its CAPACITY_REACHED says max_sessions 1"))
            if not busy or trio.current_time() > deadline:
                expect_frame(reply, "state", f"state on {what}")
                stack.push_async_exit(attempt.pop_all())
                return conn
        await trio.sleep(0.05)


_ONE_SESSION = (
    "the server admits one session at a time ({how}) and this case needs two at once; "
    "pass --max-sessions N (N >= 2) to demand more"
)


@case(
    "WS-CAP-01",
    "a connection beyond the session limit gets CAPACITY_REACHED, then close",
    ("WS-CAP-1",),
    required=False,
)
async def _capacity(ctx: CaseContext) -> None:
    limit = ctx.setup.max_sessions
    if limit is None:
        seen = sum(e.direction == "received" and "CAPACITY_REACHED" in e.preview for e in ctx.recorder.events)
        ctx.inform(
            "not driven: pass --max-sessions N (the server's max_concurrent_envs) to test WS-CAP-1; "
            f"{seen} CAPACITY_REACHED frame(s) seen during the run"
        )
        return
    async with contextlib.AsyncExitStack() as stack:
        for index in range(limit):
            await _occupy_slot(ctx, stack, f"connection {index + 1} of {limit} (within the limit)")
        extra = await stack.enter_async_context(ctx.ws())
        frame = await receive_within(extra, ctx.wait_s)
        if frame is None:
            raise CaseFailed(f"connection {limit + 1} got no frame within {ctx.wait_s:g} s (expected CAPACITY_REACHED)")
        data = expect_error(frame, "CAPACITY_REACHED", f"the frame on connection {limit + 1}")
        if data.get("max_sessions") != limit or not isinstance(data.get("active_sessions"), int):
            raise CaseFailed(
                f"CAPACITY_REACHED should carry active_sessions and max_sessions={limit}: {frame.describe()}"
            )
        rest, closed = await extra.wait_closed()
        if rest:
            raise CaseFailed(f"frames after CAPACITY_REACHED: {rest[0].describe()}")
        if closed.code == CloseCode.NORMAL:
            ctx.non_strict("closed with 1000 after CAPACITY_REACHED; WS-CAP-1 says 1013 (openenv-core 0.3 uses 1000)")
        elif closed.code != CloseCode.TRY_AGAIN_LATER:
            raise CaseFailed(f"after CAPACITY_REACHED: {closed}, expected code 1013")


# --- HTTP ------------------------------------------------------------------------------


async def _get_json(ctx: CaseContext, path: str) -> Any:
    reply = await ctx.http.request("GET", path)
    if reply.status != 200:
        raise CaseFailed(f"GET {path} answered HTTP {reply.status}: {reply.text[:200]!r}")
    if reply.body is None:
        raise CaseFailed(f"GET {path} did not answer JSON: {reply.text[:200]!r}")
    return reply.body


@case("HTTP-01", "GET /health answers status healthy", ("HTTP-1",))
async def _health(ctx: CaseContext) -> None:
    body = await _get_json(ctx, "/health")
    if not isinstance(body, Mapping) or body.get("status") != "healthy":
        raise CaseFailed(f'GET /health answered {body!r}, expected {{"status": "healthy"}}')


@case("HTTP-02", "GET /metadata answers name, description, version", ("HTTP-2",))
async def _metadata(ctx: CaseContext) -> None:
    body = await _get_json(ctx, "/metadata")
    missing = [k for k in ("name", "description", "version") if not isinstance(body, Mapping) or k not in body]
    if missing:
        raise CaseFailed(f"GET /metadata lacks {', '.join(missing)}: {str(body)[:200]}")


@case("HTTP-03", "GET /schema answers action, observation and state JSON Schemas", ("HTTP-3",), required=False)
async def _schema(ctx: CaseContext) -> None:
    body = await _get_json(ctx, "/schema")
    for member in ("action", "observation", "state"):
        schema = body.get(member) if isinstance(body, Mapping) else None
        if not isinstance(schema, (Mapping, bool)):
            raise CaseFailed(f"GET /schema: `{member}` is not a JSON Schema: {str(schema)[:120]}")
        if isinstance(schema, Mapping):
            try:
                Validator(schema)
            except ValueError as exc:
                raise CaseFailed(f"GET /schema: `{member}` does not compile: {exc}") from None


async def _unless_production(ctx: CaseContext, path: str, status: int) -> None:
    """NotApplicable when ``path`` answered 404 because the server runs in production mode
    (HTTP-10: its OpenAPI document lists no simulation routes)."""
    if status != 404:
        return
    document = await ctx.http.request("GET", "/openapi.json")
    paths = document.body.get("paths") if document.status == 200 and isinstance(document.body, Mapping) else None
    if isinstance(paths, Mapping) and "/mcp" in paths and not {"/reset", "/step", "/state"} & paths.keys():
        raise NotApplicable(f"{path}: the server runs in production mode (HTTP-10: no stateless simulation routes)")


@case("HTTP-04", "POST /reset and POST /step answer observation data", ("HTTP-4", "WS-OBS-1"))
async def _http_reset_step(ctx: CaseContext) -> None:
    reply = await ctx.http.request("POST", "/reset", {})
    await _unless_production(ctx, "POST /reset", reply.status)
    if reply.status != 200:
        raise CaseFailed(f"POST /reset answered HTTP {reply.status}: {reply.text[:200]!r}")
    check_data_shape("observation", reply.body, "POST /reset")
    if ctx.setup.action is None:
        ctx.note("no valid action: POST /step not tried")
        return
    reply = await ctx.http.request("POST", "/step", {"action": ctx.setup.action})
    if reply.status != 200:
        hint = (
            " (POST /step steps a fresh environment without a reset, HTTP-4: this environment "
            "fails when stepped before a reset)"
            if reply.status == 500
            else ""
        )
        raise CaseFailed(f"POST /step answered HTTP {reply.status}: {reply.text[:200]!r}{hint}")
    check_data_shape("observation", reply.body, "POST /step")


@case("HTTP-05", "POST /step with an invalid action answers 422 with detail", ("HTTP-4",))
async def _http_invalid(ctx: CaseContext) -> None:
    if ctx.setup.invalid_action is None:
        raise NotApplicable(ctx.setup.schema_problem or "cannot build an action the action schema refuses")
    reply = await ctx.http.request("POST", "/step", {"action": ctx.setup.invalid_action})
    await _unless_production(ctx, "POST /step", reply.status)
    if reply.status != 422:
        raise CaseFailed(f"POST /step with an invalid action answered HTTP {reply.status}, expected 422")
    if not isinstance(reply.body, Mapping) or not isinstance(reply.body.get("detail"), list):
        raise CaseFailed(f"the 422 body has no `detail` list: {reply.text[:200]!r}")


@case("HTTP-06", "GET /state answers state data", ("HTTP-5", "WS-STATE-1"))
async def _http_state(ctx: CaseContext) -> None:
    reply = await ctx.http.request("GET", "/state")
    await _unless_production(ctx, "GET /state", reply.status)
    check_data_shape("state", await _get_json(ctx, "/state"), "GET /state")


@case(
    "HTTP-07",
    "GET /openapi.json answers an OpenAPI 3.1 document with info.version",
    ("HTTP-9", "HTTP-10"),
    required=False,
)
async def _openapi(ctx: CaseContext) -> None:
    reply = await ctx.http.request("GET", "/openapi.json")
    if reply.status == 404:
        raise NotApplicable("the server has no /openapi.json")
    body = await _get_json(ctx, "/openapi.json")
    if not isinstance(body, Mapping) or not str(body.get("openapi", "")).startswith("3.1"):
        raise CaseFailed(
            "GET /openapi.json is not an OpenAPI 3.1 document: "
            f"openapi={body.get('openapi') if isinstance(body, Mapping) else body!r}"
        )
    info = body.get("info")
    if not isinstance(info, Mapping) or not isinstance(info.get("version"), str):
        raise CaseFailed("GET /openapi.json has no info.version")
    listed = body.get("paths")
    paths: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    simulation = [path for path in ("/reset", "/step", "/state") if path in paths]
    if simulation and len(simulation) != 3:
        raise CaseFailed(
            f"the OpenAPI paths mix the modes (HTTP-10): only {', '.join(simulation)} of /reset, /step, /state"
        )


_SCHEMA_RESPONSE = "http/schema-response.json"


@case("HTTP-08", "GET /schema answers the reset observation's schema (reset_observation)", ("HTTP-3",), required=False)
async def _reset_observation_schema(ctx: CaseContext) -> None:
    body = await _get_json(ctx, "/schema")
    validator = spec_validator(_SCHEMA_RESPONSE)
    if not validator.is_valid(body):
        fault = validator.faults(body)[0]
        raise CaseFailed(f"GET /schema does not match {_SCHEMA_RESPONSE} ({fault.pointer or '/'}: {fault.message})")
    if "reset_observation" not in body:
        ctx.non_strict(
            "GET /schema has no `reset_observation` (HTTP-3 SHOULD; openenv-core 0.3 sends none): "
            "a reset's observation is read with `observation`"
        )
        return
    schema = body["reset_observation"]
    if isinstance(schema, Mapping):
        try:
            Validator(schema)
        except ValueError as exc:
            raise CaseFailed(f"GET /schema: `reset_observation` does not compile: {exc}") from None


# --- MCP (JSON-RPC 2.0) ------------------------------------------------------------------

_RPC_RESPONSE = "jsonrpc/response.json"


def _rpc_response(value: Any, what: str, request_id: Any) -> Mapping[str, Any]:
    """``value`` if it is a spec-valid JSON-RPC response to ``request_id``."""
    validator = spec_validator(_RPC_RESPONSE)
    if not validator.is_valid(value):
        fault = validator.faults(value)[0]
        raise CaseFailed(f"{what}: not a JSON-RPC response ({fault.pointer or '/'}: {fault.message})")
    if value.get("id") != request_id:
        raise CaseFailed(f"{what}: the response names id {value.get('id')!r}, expected {request_id!r}")
    response: Mapping[str, Any] = value
    return response


@case("MCP-01", "POST /mcp answers JSON-RPC 2.0, errors included (HTTP 200)", ("MCP-RPC-1", "MCP-RPC-3", "MCP-ERR-1"))
async def _mcp_http(ctx: CaseContext) -> None:
    reply = await ctx.http.request("POST", "/mcp", {})
    if reply.status in (404, 405):
        raise NotApplicable(f"the server has no POST /mcp (HTTP {reply.status})")
    if reply.status != 200:
        raise CaseFailed(f"POST /mcp with {{}} answered HTTP {reply.status}, expected 200 with a JSON-RPC error")
    error = _rpc_response(reply.body, "POST /mcp {}", None).get("error")
    if not isinstance(error, Mapping) or error.get("code") != -32600:
        raise CaseFailed(f"POST /mcp {{}}: expected error -32600 (invalid request), got {reply.text[:200]!r}")
    request = {"jsonrpc": "2.0", "id": 7, "method": "conformance/no-such-method", "params": {}}
    reply = await ctx.http.request("POST", "/mcp", request)
    error = _rpc_response(reply.body, "an unknown method", 7).get("error")
    if not isinstance(error, Mapping) or error.get("code") != -32601:
        raise CaseFailed(f"an unknown method: expected error -32601, got {reply.text[:200]!r}")


async def _mcp_on_ws(conn: WsConnection, request: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    frame = await conn.request({"type": "mcp", "data": request})
    if frame.type == "error" and isinstance(frame.data, Mapping) and frame.data.get("code") == "UNKNOWN_TYPE":
        raise NotApplicable("the server does not know mcp frames (UNKNOWN_TYPE)")
    data = expect_frame(frame, "mcp", what)
    return _rpc_response(data, what, request.get("id"))


@case("MCP-02", "tools/list in an mcp frame on /ws is answered in an mcp frame", ("MCP-WS-1", "MCP-RPC-2"))
async def _mcp_ws_list(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        answer = await _mcp_on_ws(conn, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, "tools/list")
        if "error" in answer:
            ctx.note(
                f"tools/list answered error {answer['error'].get('code')}: "
                f"{answer['error'].get('message')!r} (no tools)"
            )
        await expect_state(conn, "state after an mcp frame")


@case(
    "MCP-03",
    "a bad JSON-RPC request in an mcp frame is a JSON-RPC error; the session goes on",
    ("MCP-WS-2", "MCP-RPC-3", "MCP-ERR-2"),
)
async def _mcp_ws_errors(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        answer = await _mcp_on_ws(
            conn, {"jsonrpc": "2.0", "id": 2, "method": "conformance/no-such-method", "params": {}}, "an unknown method"
        )
        if answer.get("error", {}).get("code") != -32601:
            raise CaseFailed(f"an unknown method: expected error -32601, got {answer!r}"[:300])
        frame = await conn.request({"type": "mcp", "data": {"id": 3}})
        data = expect_frame(frame, "mcp", "an mcp frame whose data is no request")
        if not isinstance(data, Mapping) or data.get("error", {}).get("code") != -32600:
            raise CaseFailed(f"an mcp frame whose data is no request: expected error -32600, got {frame.describe()}")
        await expect_state(conn, "state after JSON-RPC errors")


# --- UI channel ------------------------------------------------------------------------


async def _next_update(ui: WsConnection, ctx: CaseContext, episode_id: str | None, what: str) -> Mapping[str, Any]:
    """Read /ws/ui frames until a state_update about ``episode_id`` arrives (``None``: an
    environment that keeps no episode id, whose updates say ``null``)."""
    with trio.move_on_after(ctx.wait_s):
        while True:
            frame = await ui.receive()
            expect_frame(frame, "state_update", what)
            state: Mapping[str, Any] = frame.value["episode_state"]
            if state.get("episode_id") == episode_id:
                return state
    raise CaseFailed(f"{what}: no state_update for episode {episode_id!r} within {ctx.wait_s:g} s")


@case("UI-01", "/ws/ui sends state_update on connect and after a step", ("UI-1", "UI-2"), required=False)
async def _ui(ctx: CaseContext) -> None:
    async with ctx.ws() as agent:
        episode_id = await _reset_reported(agent, _episode("UI-01"))  # the server's, which updates name
        try:
            async with ctx.ws("/ws/ui") as ui:
                await _next_update(ui, ctx, episode_id, "on connect")
                if ctx.setup.action is not None:
                    await expect_observation(agent, {"type": "step", "data": ctx.setup.action}, "step")
                    update = await _next_update(ui, ctx, episode_id, "after a step")
                    if update.get("step_count") != 1:
                        ctx.note(f"step_count in the update after one step: {update.get('step_count')!r}")
                else:
                    episode_id = await _reset_reported(agent, _episode("UI-01"))
                    await _next_update(ui, ctx, episode_id, "after a reset")
        except HandshakeRejected as rejected:
            raise NotApplicable(f"the server has no /ws/ui ({rejected})") from None


# --- resume extension (PROTOCOL.md section 10) -----------------------------------------


@contextlib.asynccontextmanager
async def _negotiated(
    ctx: CaseContext, token: str | None = None
) -> AsyncIterator[tuple[WsConnection, Mapping[str, Any]]]:
    """A connection offering the extension's subprotocol, with its session frame's ``data``.

    NotApplicable when the server does not select the subprotocol (a base server).
    """
    headers = [(RESUME_TOKEN_HEADER, token)] if token is not None else []
    async with ctx.ws(subprotocols=[SUBPROTOCOL], headers=headers) as conn:
        if conn.subprotocol is None:
            raise NotApplicable(f"the server does not select the {SUBPROTOCOL} subprotocol (base protocol only)")
        if conn.subprotocol != SUBPROTOCOL:
            raise CaseFailed(f"the server selected {conn.subprotocol!r}, which was not offered")
        first = await conn.receive()
        if token is None or first.type == "session":
            yield conn, expect_frame(first, "session", "the first frame of a negotiated connection")
        else:
            yield conn, {"refusal": first}


async def _end_session(conn: WsConnection) -> None:
    """Send ``close`` so the server ends the session now instead of keeping it for resuming."""
    with contextlib.suppress(ServerClosed):
        await conn.send_json({"type": "close"})
        await conn.wait_closed()


@case(
    "EXT-NEG-01",
    "offering openenv-anyio.v1: selected, and the first frame is a session frame",
    ("EXT-NEG-1", "EXT-SES-1", "EXT-SES-2"),
)
async def _ext_negotiation(ctx: CaseContext) -> None:
    async with _negotiated(ctx) as (conn, session):
        if session.get("resumed") is not False or session.get("last_request_id") is not None:
            raise CaseFailed(f"a new session must say resumed false and last_request_id null: {session}")
        session_id, _, secret = str(session.get("resume_token")).partition(".")
        if session_id != session.get("session_id") or len(secret) < 22:
            raise CaseFailed("the resume token is not SESSION_ID.SECRET with at least 128 random bits")
        await _end_session(conn)


@case(
    "EXT-REQ-01", "a repeated request_id is answered from the stored answer, not run again", ("EXT-REQ-1", "EXT-REQ-2")
)
async def _ext_replay(ctx: CaseContext) -> None:
    action = ctx.require_action()
    async with _negotiated(ctx) as (conn, _):
        reset = await conn.request(
            {"type": "reset", "request_id": "conformance-1", "data": {"episode_id": _episode("EXT-REQ-01")}}
        )
        expect_frame(reset, "observation", "negotiated reset")
        before = (await expect_state(conn, "state after the reset")).get("step_count")
        step = {"type": "step", "data": action, "request_id": "conformance-2"}
        first, again = await conn.request(step), await conn.request(step)
        expect_frame(first, "observation", "step with request_id conformance-2")
        for frame, request_id in ((reset, "conformance-1"), (first, "conformance-2"), (again, "conformance-2")):
            if frame.value.get("request_id") != request_id:
                raise CaseFailed(f"the answer to request {request_id} does not echo its request_id: {frame.describe()}")
        if again.value != first.value:
            raise CaseFailed(f"the repeated request got another answer: {again.describe()} (first: {first.describe()})")
        after = (await expect_state(conn, "state after a step and its repeat")).get("step_count")
        if not isinstance(before, int) or not isinstance(after, int) or after == before:
            ctx.inform(
                f"the environment does not count steps (step_count {before!r} before, {after!r} after): "
                "the answer was replayed with its request_id, but whether the step ran twice cannot be seen"
            )
        elif after != before + 1:
            raise CaseFailed(f"the repeat ran the step again: step_count {after!r}, expected {before + 1}")
        await _end_session(conn)


@case(
    "EXT-RES-01", "the token resumes the session on a new connection, which takes it over", ("EXT-RES-1", "EXT-RES-5")
)
async def _ext_resume(ctx: CaseContext) -> None:
    async with _negotiated(ctx) as (old, session):
        reset = {"type": "reset", "request_id": "conformance-1", "data": {"episode_id": _episode("EXT-RES-01")}}
        expect_frame(await old.request(reset), "observation", "negotiated reset")
        episode_id = (await expect_state(old, "state after the reset")).get("episode_id")
        if episode_id != _episode("EXT-RES-01"):
            ctx.note(ENV_KEEPS_NO_EPISODE.format(seen=episode_id))
            episode_id = None
        async with _negotiated(ctx, str(session.get("resume_token"))) as (new, resumed):
            if resumed.get("resumed") is not True or resumed.get("session_id") != session.get("session_id"):
                raise CaseFailed(f"presenting the token did not resume the session: {resumed}")
            if resumed.get("last_request_id") != "conformance-1":
                raise CaseFailed(f"last_request_id is {resumed.get('last_request_id')!r}, expected 'conformance-1'")
            _, closed = await old.wait_closed()
            if closed.code != CloseCode.TAKEN_OVER:
                raise CaseFailed(f"the earlier connection: {closed}, expected code 4409 (taken over)")
            await expect_alive(new, "the takeover", episode_id)
            await _end_session(new)


@case("EXT-RES-02", "an unknown resume token gets SESSION_NOT_FOUND, then close 4404", ("EXT-RES-4",))
async def _ext_unknown_token(ctx: CaseContext) -> None:
    bogus = "conformance-unknown." + "A" * 43
    async with _negotiated(ctx, bogus) as (conn, answer):
        refusal = answer.get("refusal")
        if refusal is None:
            raise CaseFailed(f"an unknown token resumed a session: {answer}")
        expect_error(refusal, "SESSION_NOT_FOUND", "the answer to an unknown token")
        _, closed = await conn.wait_closed()
        if closed.code != CloseCode.SESSION_NOT_FOUND:
            raise CaseFailed(f"after SESSION_NOT_FOUND: {closed}, expected code 4404")


@case("EXT-EP-01", "a step naming another episode gets EPISODE_MISMATCH and changes nothing", ("EXT-EP-1", "EXT-EP-2"))
async def _ext_episode_mismatch(ctx: CaseContext) -> None:
    action = ctx.require_action()
    episode_id = _episode("EXT-EP-01")
    async with _negotiated(ctx) as (conn, _):
        reset = await conn.request({"type": "reset", "request_id": "conformance-1", "data": {"episode_id": episode_id}})
        expect_frame(reset, "observation", "negotiated reset")
        if reset.value.get("episode_id") != episode_id:
            kept = (await expect_state(conn, "state after the reset")).get("episode_id")
            if kept != episode_id:
                await _end_session(conn)
                raise NotApplicable(
                    f"the environment keeps no episode id (state reports {kept!r}); EXT-EP-2 applies "
                    "when it reports one, and EXT-EP-1 needs one to tell episodes apart"
                )
            raise CaseFailed(f"the reset's answer does not name the episode {episode_id!r}: {reset.describe()}")
        stale = {"type": "step", "data": action, "request_id": "conformance-2", "episode_id": "conformance-stale"}
        expect_error(await conn.request(stale), "EPISODE_MISMATCH", "a step naming another episode")
        state = await expect_state(conn, "state after the refused step")
        if state.get("step_count") != 0 or state.get("episode_id") != episode_id:
            raise CaseFailed(f"the refused step changed the session: {state}")
        await _end_session(conn)


# --- validation telemetry, episode determinism and isolation (PROTOCOL.md section 13) ----

_REFUSALS = ("VALIDATION_REFUSED", "UNKNOWN_TYPE")
#: a token no server was started with (the kit's refusal probes)
_WRONG_TOKEN = "conformance-not-the-validation-token-" + "0" * 27


def _validation_open(token: str) -> dict[str, Any]:
    return {"type": "validation_open", "data": {"schema_version": 1, "token": token}}


def _validation_read(capability: str) -> dict[str, Any]:
    return {"type": "validation_read", "data": {"schema_version": 1, "capability": capability}}


def _refused(frame: Received, token: str, what: str) -> str:
    """The code of the error frame refusing a telemetry request (it must not echo ``token``)."""
    if frame.type != "error" or not isinstance(frame.data, Mapping):
        raise CaseFailed(f"{what}: expected an error frame, got {frame.describe()}")
    if token in (frame.payload if isinstance(frame.payload, str) else frame.payload.decode(errors="replace")):
        raise CaseFailed(f"{what}: the refusal echoes the token (VAL-OPEN-2)")
    return str(frame.data.get("code"))


def _validation_token(ctx: CaseContext) -> str:
    """The server's validation token; not applicable (before any session opens) without it."""
    token = ctx.setup.options.validation_token
    if token is None:
        raise NotApplicable("not offered here: no validation token given ($OPENENV_VALIDATION_TOKEN)")
    return token


async def _expect_refused(conn: WsConnection, request: Mapping[str, Any], token: str, what: str) -> None:
    """``request`` is answered VALIDATION_REFUSED (``VAL-OPEN-2``), without echoing ``token``."""
    code = _refused(await conn.request(request), token, what)
    if code != "VALIDATION_REFUSED":
        raise CaseFailed(f"{what}: expected VALIDATION_REFUSED, got {code}")


async def _open_telemetry(ctx: CaseContext, conn: WsConnection) -> str:
    """Open ``conn``'s telemetry with the server's validation token; the capability. Not
    applicable when the server does not offer telemetry."""
    token = _validation_token(ctx)
    frame = await conn.request(_validation_open(token))
    if frame.type == "error" and _refused(frame, token, "validation_open") in _REFUSALS:
        if frame.data.get("code") == "UNKNOWN_TYPE":
            raise NotApplicable("not offered: the server does not know validation_open (UNKNOWN_TYPE)")
        raise CaseFailed(f"validation_open with the server's token was refused: {frame.data.get('message')!r}")
    capability = expect_frame(frame, "validation_open", "validation_open").get("capability")
    if not isinstance(capability, str):
        raise CaseFailed("validation_open: the answer carries no capability")
    return capability


async def _read_telemetry(conn: WsConnection, capability: str) -> Mapping[str, Any]:
    data = expect_frame(await conn.request(_validation_read(capability)), "validation", "validation_read")
    if data.get("schema_version") != 1:
        raise CaseFailed(f"validation_read: schema_version {data.get('schema_version')!r}, expected 1")
    return data


def _plan(ctx: CaseContext, case_id: str, seed: int = 7) -> list[dict[str, Any]]:
    """A replayable plan: reset with a seed and an episode id, state, then the action twice,
    each followed by state (as upstream's validator replays one)."""
    action = dict(ctx.require_action())
    step: list[dict[str, Any]] = [{"type": "step", "data": action}, {"type": "state"}]
    return [{"type": "reset", "data": {"seed": seed, "episode_id": _episode(case_id)}}, {"type": "state"}, *step, *step]


async def _replay(conn: WsConnection, plan: list[dict[str, Any]]) -> list[Any]:
    """The parsed answers to ``plan``'s frames."""
    return [(await conn.request(frame)).value for frame in plan]


@case(
    "VAL-01",
    "validation telemetry with a wrong token is refused, never echoed; the session goes on",
    ("VAL-OPEN-2",),
)
async def _telemetry_wrong_token(ctx: CaseContext) -> None:
    async with ctx.ws() as conn:
        code = _refused(await conn.request(_validation_open(_WRONG_TOKEN)), _WRONG_TOKEN, "a wrong token")
        if code == "UNKNOWN_TYPE":
            raise NotApplicable("not offered: the server does not know validation_open (UNKNOWN_TYPE)")
        if code != "VALIDATION_REFUSED":
            ctx.non_strict(f"a wrong token was refused with code {code}, not VALIDATION_REFUSED")
        await expect_alive(conn, "a refused validation_open")


@case(
    "VAL-02",
    "telemetry opens before the first reset only, once, and reads with its own capability only",
    ("VAL-OPEN-1", "VAL-OPEN-2", "VAL-READ-1"),
)
async def _telemetry_refusals(ctx: CaseContext) -> None:
    token = _validation_token(ctx)
    async with ctx.ws() as conn, ctx.ws() as other:
        capability = await _open_telemetry(ctx, conn)
        await _expect_refused(conn, _validation_open(token), token, "a second validation_open")
        await _expect_refused(
            conn, _validation_read(capability + "x"), token, "validation_read with another capability"
        )
        await _expect_refused(other, _validation_read(capability), token, "another session's capability")
        await expect_observation(other, {"type": "reset", "data": {}}, "reset")
        await _expect_refused(other, _validation_open(token), token, "validation_open after the first reset")
        await _read_telemetry(conn, capability)
        await expect_alive(other, "refused telemetry requests")


@case(
    "VAL-03",
    "the trajectory record is what went over the wire; the seed report names the reset's seed",
    ("VAL-READ-1", "VAL-SEED-1", "VAL-TRAJ-1"),
)
async def _telemetry_record(ctx: CaseContext) -> None:
    _validation_token(ctx)
    plan = _plan(ctx, "VAL-03")
    async with ctx.ws() as conn:
        capability = await _open_telemetry(ctx, conn)
        answers = await _replay(conn, plan)
        telemetry = await _read_telemetry(conn, capability)
    seed = telemetry.get("seed")
    if not isinstance(seed, Mapping) or seed.get("requested") is not True or seed.get("value") != 7:
        raise CaseFailed(f"the seed report {seed!r} does not name the reset's seed 7 as requested (VAL-SEED-1)")
    if seed.get("accepted") is not True:
        ctx.note("the environment does not take the seed (accepted: false): upstream grades runtime.seed_control fail")
    trajectory = telemetry.get("trajectory")
    if not isinstance(trajectory, Mapping) or trajectory.get("source") != "openenv-server":
        raise CaseFailed("the trajectory record is missing or does not name source openenv-server (VAL-TRAJ-1)")
    if trajectory.get("complete") is not True:
        raise CaseFailed("the trajectory record of a short episode says it is incomplete (VAL-TRAJ-2)")
    expected = [
        {"operation": frame["type"], "request": frame, "response": answer} for frame, answer in zip(plan, answers)
    ]
    records = trajectory.get("records")
    if records != expected:
        first = next(
            (i for i, pair in enumerate(zip(records or [], expected)) if pair[0] != pair[1]),
            min(len(records or []), len(expected)),
        )
        raise CaseFailed(f"the trajectory record differs from the wire at record {first} (VAL-TRAJ-1)")


@case(
    "VAL-04",
    "one plan replayed in two fresh sessions gets identical reset, step and state answers",
    ("VAL-DET-1",),
)
async def _episode_determinism(ctx: CaseContext) -> None:
    plan = _plan(ctx, "VAL-04")
    replays = []
    for _ in range(2):
        async with ctx.ws() as conn:
            replays.append(await _replay(conn, plan))
    first, second = replays
    for index, (left, right) in enumerate(zip(first, second)):
        if left != right:
            raise CaseFailed(
                f"the replays differ at the answer to {plan[index]['type']} #{index}: "
                f"{preview(dumps(left), 120)} then {preview(dumps(right), 120)} (the environment, or a value "
                "the server adds, varies between replays)"
            )


@case(
    "VAL-05",
    "after an episode A and a reset, episode B is answered exactly as B alone",
    ("VAL-ISO-1",),
)
async def _episode_isolation(ctx: CaseContext) -> None:
    plan_b = _plan(ctx, "VAL-05")
    plan_a = _plan(ctx, "VAL-05-A", seed=8)
    async with ctx.ws() as conn:
        alone = await _replay(conn, plan_b)
    async with ctx.ws() as conn:
        await _replay(conn, plan_a)
        after_a = await _replay(conn, plan_b)
    for index, (left, right) in enumerate(zip(alone, after_a)):
        if left != right:
            raise CaseFailed(
                f"after episode A, episode B's answer to {plan_b[index]['type']} #{index} differs from B alone: "
                f"{preview(dumps(right), 120)} instead of {preview(dumps(left), 120)}"
            )


# --- the Task API (PROTOCOL.md section 9.1) ----------------------------------------------

_TASK_ANSWER_BYTES = 1024 * 1024


async def _task_env_name(ctx: CaseContext) -> str:
    """The served environment's name for ``/{env}/...``: ``GET /list_environments``, else
    the metadata's ``name``."""
    listed = await ctx.http.request("GET", "/list_environments")
    if listed.status == 200 and isinstance(listed.body, list) and listed.body and isinstance(listed.body[0], str):
        return listed.body[0]
    metadata = await ctx.http.request("GET", "/metadata")
    name = metadata.body.get("name") if isinstance(metadata.body, Mapping) else None
    if not isinstance(name, str) or not name:
        raise NotApplicable("the environment's name is unknown (no /list_environments, no metadata name)")
    return name


def _task_answer(reply: Any, what: str, member: str) -> Any:
    if reply.status != 200 or not isinstance(reply.body, Mapping) or member not in reply.body:
        raise CaseFailed(f"{what}: expected 200 with {member!r}, got HTTP {reply.status} {reply.text[:160]!r}")
    if len(reply.text.encode()) > _TASK_ANSWER_BYTES:
        raise CaseFailed(f"{what}: the answer is over 1 MiB (TASK-4)")
    return reply.body[member]


@case(
    "TASK-01",
    "the Task API's splits, counts and tasks agree; bad requests are refused (not offered: 501)",
    ("TASK-1", "TASK-2", "TASK-3", "TASK-4"),
    required=False,
)
async def _task_api(ctx: CaseContext) -> None:
    name = await _task_env_name(ctx)
    splits = await ctx.http.request("GET", f"/{name}/splits")
    if splits.status in (404, 405, 501):
        raise NotApplicable(f"not offered: GET /{name}/splits answers HTTP {splits.status}")
    if splits.status != 200 or not isinstance(splits.body, list):
        raise CaseFailed(f"GET /{name}/splits: expected a list, got HTTP {splits.status} {splits.text[:160]!r}")
    names = [entry.get("name") if isinstance(entry, Mapping) else None for entry in splits.body]
    if not all(isinstance(split, str) and split for split in names) or len(set(names)) != len(names):
        raise CaseFailed(f"GET /{name}/splits: every split needs a distinct name (TASK-1): {splits.text[:160]!r}")
    for split in names[:8]:
        count = _task_answer(
            await ctx.http.request("POST", f"/{name}/num_tasks", {"split": split}), f"num_tasks {split}", "num_tasks"
        )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise CaseFailed(f"num_tasks {split}: {count!r} is not a count (TASK-2)")
        for index in range(min(2, count)):
            reply = await ctx.http.request("POST", f"/{name}/task", {"split": split, "index": index})
            _task_answer(reply, f"task {split}[{index}]", "task")
        beyond = await ctx.http.request("POST", f"/{name}/task", {"split": split, "index": count})
        if beyond.status != 400:
            ctx.non_strict(f"task {split}[{count}] (past the last) answered HTTP {beyond.status}, not 400 (TASK-3)")
    for body, what in (({"split": names[0] if names else "train", "index": -1}, "a negative index"), ([], "a list")):
        bad = await ctx.http.request("POST", f"/{name}/task", body)
        if bad.status == 200:
            raise CaseFailed(f"task with {what} was answered 200 (TASK-3)")
        if bad.status != 422:
            ctx.non_strict(f"task with {what} answered HTTP {bad.status}, not 422 (TASK-3)")


# --- bearer tokens on the /ws upgrade (PROTOCOL.md section 12) ---------------------------


async def _upgrade_status(ctx: CaseContext, authorization: str | None) -> int | None:
    """The HTTP status refusing a ``/ws`` upgrade sent with ``authorization`` (none: without
    the header), or ``None`` when the WebSocket opened and a state request was answered."""
    target = dataclasses.replace(ctx.setup.target, headers=())
    headers = (("Authorization", authorization),) if authorization is not None else ()
    try:
        async with open_ws(target, ctx.recorder, connect_timeout=ctx.setup.timeout_s, headers=headers) as conn:
            await expect_state(conn, "state on a session opened with the token")
    except HandshakeRejected as rejected:
        return rejected.status
    return None


@case(
    "SEC-01",
    "with a token, the /ws upgrade of the orchestrator opens; without it or with a wrong one it is refused (401)",
    ("SEC-TOKEN-1",),
    required=False,
)
async def _ws_bearer_token(ctx: CaseContext) -> None:
    token = ctx.setup.options.token
    if token is None:
        raise NotApplicable("not offered here: no token given (--token, $OPENENV_TOKEN)")
    if await _upgrade_status(ctx, None) is None:
        raise NotApplicable("not offered: the server opens /ws without a token (it requires none)")
    for what, authorization in (
        ("without Authorization", None),
        ("with a wrong token", "Bearer conformance-wrong-token-" + "0" * 20),
        ("with a malformed header", "Basic " + token),
    ):
        status = await _upgrade_status(ctx, authorization)
        if status is None:
            raise CaseFailed(f"the /ws upgrade {what} opened a session (SEC-TOKEN-1)")
        if status != 401:
            ctx.non_strict(f"the /ws upgrade {what} was refused with HTTP {status}, not 401")
    if await _upgrade_status(ctx, f"Bearer {token}") is not None:
        raise CaseFailed("the /ws upgrade with the token given was refused (SEC-TOKEN-1)")


# --- spec vectors ----------------------------------------------------------------------


@case(
    "SPEC-VEC-01", "every invalid client frame of spec/v1/examples gets its error code", ("WS-ERR-9",), required=False
)
async def _spec_vectors(ctx: CaseContext) -> None:
    directory = ctx.setup.options.examples_dir or default_examples_dir()
    vectors = client_error_vectors(directory) if directory is not None else []
    if not vectors:
        raise NotApplicable("the spec has no example vectors (spec/v1/examples/invalid)")
    problems: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        conn: WsConnection | None = None
        for vector in vectors:
            if conn is None:
                conn = await stack.enter_async_context(ctx.ws())
            try:
                await conn.send_text(vector.text)
                expect_error(await conn.receive(), vector.expect_code, f"{vector.name} [{vector.requirement}]")
                await expect_alive(conn, vector.name)
            except CaseFailed as failed:
                problems.append(str(failed))
            except ServerClosed as closed:
                problems.append(f"{vector.name} [{vector.requirement}]: {closed}")
                conn = None  # the next vector gets a new connection
    ctx.note(f"{len(vectors)} vector(s) sent from {directory}")
    if problems:
        raise CaseFailed(f"{len(problems)} of {len(vectors)} vector(s) mishandled: " + "; ".join(problems))


# --- hand-over across a server restart (PROTOCOL.md section 10.7) ------------------------
#
# Last before the synthetic case: it restarts the server under test.

case(
    "EXT-HAND-01",
    "a session survives a restart of the server (--restart-command): resumed, continued, exactly once",
    HANDOVER_REQUIREMENTS,
    required=False,
    extra_time=lambda options: 2 * options.restart_timeout_s,
)(restart_hands_over)


# --- synthetic -------------------------------------------------------------------------


@case("SCHEMA-01", "every frame the server sent during the run matches the spec", ("WS-CONN-3",), offline=True)
async def _all_frames_valid(ctx: CaseContext) -> None:
    received = [e for e in ctx.recorder.events if e.direction == "received" and e.channel != "http"]
    bad = [e for e in received if e.faults]
    ctx.note(f"{len(received)} frame(s) checked against server-frame.json / ui-frame.json")
    if bad:
        shown = "; ".join(f"{e.case_id} {e.channel}#{e.connection}: {e.faults[0]}" for e in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise CaseFailed(f"{len(bad)} frame(s) break the spec: {shown}{more}")


CASES: tuple[Case, ...] = tuple(_registry)


def select_cases(only: list[str] | None) -> list[Case]:
    """The cases named by ``only`` (exact IDs, or groups: ID prefixes up to a dash, like
    ``WS-ERR`` or ``WS``), in run order.

    Raises ValueError naming any selector that matches no case, and the groups there are.
    """
    if not only:
        return list(CASES)

    def matches(case: Case, selector: str) -> bool:
        return case.id == selector.upper() or case.id.startswith(selector.upper() + "-")

    unknown = [s for s in only if not any(matches(c, s) for c in CASES)]
    if unknown:
        groups = " ".join(sorted({c.id.split("-", 1)[0] for c in CASES}))
        raise ValueError(
            f"unknown case ID(s): {', '.join(unknown)} "
            f"(groups: {groups}, or narrower ones like WS-ERR; --list shows every case ID)"
        )
    return [c for c in CASES if any(matches(c, s) for s in only)]
