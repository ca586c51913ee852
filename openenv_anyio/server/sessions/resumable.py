"""Sessions that survive a dropped connection (the resume extension, PROTOCOL.md section 10).

Only connections that negotiated the ``openenv-anyio.v1`` subprotocol come here; base
connections keep the lean path of :mod:`.base` untouched.

The session (environment, UI view, request ledger) is kept in the store of sessions that
outlive a connection (:mod:`.kept`); a connection holds it while it serves. When a
connection drops, the store keeps the session for ``resume_grace_s``, and a connection
that presents the token takes it over. One connection drives a session at a time: a
takeover waits until the earlier connection has finished the request it is executing (its
answer is stored in the ledger first), so a repeated ``request_id`` is answered from the
ledger and the environment never runs a request twice.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, assert_never

import trio

from ...core import (
    RESUME_TOKEN_HEADER,
    SUBPROTOCOL,
    Decision,
    Error,
    ErrorCode,
    Mcp,
    Reset,
    StateRequest,
    Step,
    token_hint,
)
from ...core import Session as SessionFrame
from ...core.errors import clip_message
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..execution.faults import EnvironmentAborted
from ..observability import peer_of
from .accept import Accepted, Capacity, serve_connection
from .answers import Answers, EnvAnswers, Request, RpcDispatch
from .base import ProtocolFrames, open_session
from .connection import SessionConnection
from .ends import SessionEnd
from .handover import NOT_FOUND, Handover, Refusal
from .kept import KeptSession, KeptSessions, KeptState
from .server import SessionsServer
from .session import Session, SessionIdentity, SessionKind

log = logging.getLogger("openenv_anyio.server")

__all__ = ["negotiated", "serve_resumable"]

_TOKEN_HEADER = RESUME_TOKEN_HEADER.lower().encode("ascii")
_MAX_TOKEN_CHARS = 512


def negotiated(scope: dict[str, Any]) -> bool:
    """Whether the client offered the extension's subprotocol (``EXT-NEG-1``)."""
    return SUBPROTOCOL in (scope.get("subprotocols") or ())


def _presented_token(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == _TOKEN_HEADER:
            return str(value[:_MAX_TOKEN_CHARS].decode("latin-1")).strip()
    return None


class OnceAnswers:
    """Requests with a ``request_id`` (reset, step) run at most once (``EXT-REQ-1``); the
    rest are answered by ``inner``."""

    def __init__(
        self,
        ctx: SessionsServer,
        session: KeptSession,
        identity: SessionIdentity,
        inner: Answers,
        handover: Handover | None = None,
    ) -> None:
        self.ctx = ctx
        self.session = session
        self.identity = identity
        self.inner = inner
        #: the server's session store, when it keeps sessions in one (``EXT-HAND-4``)
        self.handover = handover

    @property
    def aborted(self) -> EnvironmentAborted | None:
        return self.inner.aborted

    async def answer(self, frame: Request, request_id: str | None = None) -> str:
        match frame:
            case Step() | Reset() if frame.request_id is not None:
                return await self._answer_once(frame, frame.request_id)
            case Step() | Reset() | StateRequest() | Mcp():
                return await self.inner.answer(frame)
            case _:
                assert_never(frame)

    async def _answer_once(self, frame: Step | Reset, request_id: str) -> str:
        """Run a request at most once per ``request_id`` (``EXT-REQ-1``), checking the episode."""
        session = self.session
        ledger = session.ledger
        asked = _what_is_asked(frame)
        decision = ledger.decide(request_id, asked)
        while decision is Decision.WAIT:
            await session.answered.wait()
            decision = ledger.decide(request_id, asked)
        if decision is Decision.REPLAY:
            self.ctx.instruments.replayed()
            return ledger.stored_answer()
        if decision is Decision.CONFLICT:  # EXT-REQ-3: never the answer to another request
            return self.ctx.encode(
                Error(
                    ErrorCode.REQUEST_ID_REUSED.value,
                    f"request_id {clip_message(request_id, 40)!r} was the session's last request, "
                    "which asked something else; nothing ran",
                    request_id=request_id,
                ),
                session=self.identity,
            )
        ledger.begin(request_id, asked)
        expected = frame.episode_id if type(frame) is Step else None
        if expected is not None and expected != session.view.episode_id:  # EXT-EP-1
            current = session.view.episode_id
            text = self.ctx.encode(
                Error(
                    ErrorCode.EPISODE_MISMATCH.value,
                    f"the step names episode {expected!r} but the session's current episode is {current!r}; "
                    "nothing changed",
                    {"current_episode_id": current},
                    request_id,
                ),
                session=self.identity,
            )
        else:
            text = await self.inner.answer(frame, request_id)
            if self.handover is not None:
                self.handover.note_answer(session, frame, text)
        ledger.complete(request_id, text)  # stored before sending: a lost answer is replayed
        session.answer_stored()
        if self.handover is not None and self.handover.durable:  # EXT-HAND-4: in the store before it leaves
            await self.handover.write(session)
        return text


def _what_is_asked(frame: Step | Reset) -> tuple[object, ...]:
    """What a request asks, compared when its ``request_id`` repeats (``EXT-REQ-3``)."""
    match frame:
        case Step():
            return ("step", frame.action, frame.episode_id)
        case Reset():
            return ("reset", frame.kwargs)
        case _:
            assert_never(frame)


class ResumableConnection:
    """One negotiated connection holding a resumable session while it serves (a
    :class:`~.kept.Holder`)."""

    def __init__(
        self,
        ctx: SessionsServer,
        accepted: Accepted,
        session: KeptSession,
        rpc: RpcDispatch,
        handover: Handover | None,
    ) -> None:
        self.ctx = ctx
        self.session = session
        self.rpc = rpc
        self.handover = handover
        self.send = accepted.send
        self.identity = SessionIdentity(session.session_id, peer_of(accepted.scope), session.view)
        before_close = partial(handover.before_close, session) if handover is not None else None
        self.connection = SessionConnection(
            ctx, accepted, self.identity, slot=session.slot, lives_on=True, before_close=before_close
        )
        self.released = trio.Event()

    def let_go(self, end: SessionEnd) -> None:
        """Another connection takes the session over, or it closes: end after the request
        being executed (``EXT-RES-5``)."""
        self.connection.stop(end)

    async def greet(self, resumed: bool) -> None:
        """The ``session`` frame, first on every negotiated connection (``EXT-SES-1``)."""
        session = self.session
        frame = SessionFrame(
            session.session_id,
            session.key,
            resumed,
            self.ctx.config.resume_grace_s,
            session.ledger.last_request_id,
            session.view.episode_id,
        )
        await self.send({"type": "websocket.send", "text": self.ctx.encode(frame)})

    async def serve(self) -> SessionEnd:
        """Serve until this connection ends; why it ended."""
        ctx, session, connection = self.ctx, self.session, self.connection
        inner = EnvAnswers(ctx, self.identity, session.env, self.rpc)
        answers = OnceAnswers(ctx, session, self.identity, inner, self.handover)
        return await connection.serve(session.env, ProtocolFrames(ctx, self.identity, answers, self.send))


async def _refuse_token(ctx: SessionsServer, scope: dict[str, Any], send: AsgiSend, presented: str) -> None:
    """``SESSION_NOT_FOUND`` then close 4404 (``EXT-RES-4``)."""
    log.info("resume refused: no session for token %s", token_hint(presented))
    await _refuse(ctx, scope, send, NOT_FOUND)


async def _refuse(ctx: SessionsServer, scope: dict[str, Any], send: AsgiSend, refusal: Refusal) -> None:
    """The refusal's error frame, if it has one, then its close."""
    if refusal.code is not None:
        await send({"type": "websocket.send", "text": ctx.encode(Error(refusal.code.value, refusal.message))})
    ctx.instruments.connection_refused(peer_of(scope), refusal.close_code, refusal.reason)
    await close_websocket(send, refusal.close_code, refusal.reason)


async def _resume(
    ctx: SessionsServer,
    store: KeptSessions,
    rpc: RpcDispatch,
    handover: Handover | None,
    presented: str,
    accepted: Accepted,
) -> None:
    """A connection presenting a resume token (``EXT-RES-1``): take the session over; one
    this process does not know may be in its session store (``EXT-HAND-2``)."""
    session = store.find_resumable(presented)
    if session is None and handover is not None:
        found = await handover.take_back(presented, peer_of(accepted.scope))
        if isinstance(found, Refusal):
            log.info("resume refused: token %s: %s", token_hint(presented), found.message or found.reason)
            await _refuse(ctx, accepted.scope, accepted.send, found)
            return
        session = found
    if session is None:
        await _refuse_token(ctx, accepted.scope, accepted.send, presented)
        return
    connection = ResumableConnection(ctx, accepted, session, rpc, handover)
    taken = False
    try:
        taken = await store.take(session, connection)
    finally:
        if not taken:  # a later connection took it meanwhile, or it ended
            connection.released.set()
    if not taken:
        await _refuse_token(ctx, accepted.scope, accepted.send, presented)
        return
    store.resumed(session)
    await _drive(ctx, store, connection, accepted, resumed=True)


async def _start(
    ctx: SessionsServer, store: KeptSessions, rpc: RpcDispatch, handover: Handover | None, accepted: Accepted
) -> None:
    """A new negotiated session: it holds the slot until it ends, not just its connection."""
    slot = accepted.slot
    assert slot is not None
    identity = Session.new_identity(ctx, peer_of(accepted.scope))
    try:
        opened = await open_session(ctx, SessionKind.RESUMABLE, identity, accepted, slot)
    except BaseException:
        slot.release()
        raise
    if opened is None:
        slot.release()
        return
    session = store.keep_resumable(opened)
    connection = ResumableConnection(ctx, accepted, session, rpc, handover)
    store.hold_first(session, connection)
    await _drive(ctx, store, connection, accepted, resumed=False)


async def _drive(
    ctx: SessionsServer, store: KeptSessions, connection: ResumableConnection, accepted: Accepted, *, resumed: bool
) -> None:
    """Serve the session on ``connection`` until it ends; then the store keeps the session
    for a new connection (a lost link, ``EXT-RES-2``) or ends it."""
    session, instruments, registry = connection.session, ctx.instruments, ctx.registry
    served = connection.connection
    end = SessionEnd.ERROR
    registry.attach(served)
    try:
        await served.watch_peer_close()
        await connection.greet(resumed)
        if resumed:
            instruments.session_resumed(served, accepted.accepted_at)
        end = await connection.serve()
    finally:
        registry.detach(served)
        if end is SessionEnd.TAKEOVER:
            instruments.session_handed_over(served, served.close_code)
        if await store.release(session, connection, end, served.close_code) is KeptState.WAITING:  # EXT-RES-2
            grace = ctx.config.resume_grace_s
            instruments.session_parked(served, grace, served.close_code)
            log.info("session %s: connection lost, kept %g s for resuming", session.session_id, grace)


async def serve_resumable(
    ctx: SessionsServer,
    store: KeptSessions,
    rpc: RpcDispatch,
    handover: Handover | None,
    scope: dict[str, Any],
    receive: AsgiReceive,
    send: AsgiSend,
) -> None:
    """ASGI handler of one negotiated ``/ws`` connection (``rpc`` answers its ``mcp`` frames;
    ``handover``: the server's session store, when it keeps sessions in one)."""
    presented = _presented_token(scope)
    if presented is None:
        await serve_connection(
            ctx,
            scope,
            receive,
            send,
            partial(_start, ctx, store, rpc, handover),
            capacity=Capacity.SESSION,
            subprotocol=SUBPROTOCOL,
        )
    else:
        await serve_connection(
            ctx,
            scope,
            receive,
            send,
            partial(_resume, ctx, store, rpc, handover, presented),
            capacity=Capacity.BROUGHT,
            subprotocol=SUBPROTOCOL,
        )
