"""The frame handler of ``/ws`` sessions on a server started with a validation token: the
base protocol's frames (a :class:`~..sessions.base.ProtocolFrames` inside) plus
``validation_open`` and ``validation_read`` (``VAL-OPEN-1``, ``VAL-READ-1``).

Only servers with telemetry on (:attr:`~..config.ServerConfig.validation_telemetry`) use it.
Until a session's first reset it looks at every frame; a session that resets without opening
telemetry is handed straight to the inner handler from then on; an open session has each
reset, step and state exchange recorded as it goes over the wire (``VAL-TRAJ-1``): the frame
the client sent and the text the inner handler sends back.
"""

from __future__ import annotations

from functools import partial
from typing import Any, assert_never

from ...core import (
    Close,
    Error,
    Mcp,
    ProtocolError,
    Reset,
    StateRequest,
    Step,
    Validation,
    ValidationOpen,
    ValidationOpened,
    ValidationRead,
    decode_client_frame,
    decode_client_text,
)
from ...environment import takes_seed
from ..asgi import AsgiSend
from ..context import ServerContext
from ..execution.bound_env import BoundEnv
from ..execution.faults import EnvironmentAborted
from ..hypercorn_adapter.events import HeldText
from ..sessions.answers import EnvAnswers, RpcDispatch
from ..sessions.base import HandlerFactory, ProtocolFrames
from ..sessions.ends import SessionEnd
from ..sessions.server import SessionsServer
from ..sessions.session import SessionIdentity
from .record import RecordPhase, SessionRecord

__all__ = ["ValidationFrames", "validation_handlers"]


class ValidationFrames:
    """A session's frames with validation telemetry (see the module doc)."""

    def __init__(
        self, ctx: SessionsServer, identity: SessionIdentity, env: BoundEnv, send: AsgiSend, *, rpc: RpcDispatch
    ) -> None:
        token = ctx.config.validation_token
        assert token, "only a server with a validation token serves telemetry"
        self.ctx = ctx
        self.identity = identity
        self.record = SessionRecord(token, seeded=takes_seed(env.env))
        self._send = send
        self._sent: str | None = None  # the text the inner handler sent last, while recording
        self.inner = ProtocolFrames(ctx, identity, EnvAnswers(ctx, identity, env, rpc), self._recorded_send)

    @property
    def aborted(self) -> EnvironmentAborted | None:
        return self.inner.aborted

    async def _recorded_send(self, message: Any) -> None:
        self._sent = message.get("text")
        await self._send(message)

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
        record = self.record
        if record.phase is RecordPhase.PASSED:  # the usual session: no telemetry, nothing more per frame
            return await self.inner.handle(payload)
        text: str | bytes | None
        try:
            if isinstance(payload, HeldText):  # a large frame: its bytes, kept for the record
                text = None if payload.data is None else bytes(payload.data)
                frame = decode_client_text(text or b"")
            else:
                text = payload
                frame = decode_client_frame(payload)
        except ProtocolError:
            return await self.inner.handle(payload)  # it answers the error
        match frame:
            case ValidationOpen() | ValidationRead():
                await self._send_text(self._validation_reply(frame))
                return None
            case Reset() | Step():
                if not record.episode_request(frame):
                    self.inner.send = self._send  # nothing to record: the plain path from now on
                    self.inner.validation_refusal = "telemetry opens only before the session's first reset"
                    return await self.inner.handle(payload)
            case StateRequest() | Close() | Mcp():
                if record.phase is not RecordPhase.OPEN:
                    return await self.inner.handle(payload)
            case _:
                assert_never(frame)
        self._sent = None
        end = await self.inner.handle(payload)
        if self._sent is not None and text is not None:
            record.record(frame.type, text, self._sent)
        return end

    def _validation_reply(self, frame: ValidationOpen | ValidationRead) -> str:
        """The text answering a telemetry request: its reply, or ``VALIDATION_REFUSED``
        (``VAL-OPEN-2``: nothing changes, the session goes on)."""
        try:
            match frame:
                case ValidationOpen():
                    return self.ctx.encode(ValidationOpened(self.record.open(frame.token)))
                case ValidationRead():
                    return self.ctx.encode(Validation(self.record.read(frame.capability)))
                case _:
                    assert_never(frame)
        except ProtocolError as error:
            return self.ctx.encode(Error.from_protocol_error(error), session=self.identity)

    async def _send_text(self, text: str) -> None:
        await self._send({"type": "websocket.send", "text": text})


def validation_handlers(ctx: ServerContext, rpc: RpcDispatch) -> HandlerFactory | None:
    """The handler factory of ``/ws`` sessions with telemetry (``rpc`` answers their ``mcp``
    frames), or ``None`` when it is off."""
    return partial(ValidationFrames, rpc=rpc) if ctx.config.validation_telemetry else None
