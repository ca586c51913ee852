"""The opening of every session connection, written once: accept, refuse while closing,
hold capacity.

:func:`serve_connection` accepts the WebSocket (with the subprotocol the variant
negotiated, ``WS-CONN-1``, ``EXT-NEG-1``), refuses it while the server drains or stops
(1013, ``WS-DRAIN-1``; 1001 once stopping, ``WS-SHUT-1``), takes a capacity slot when the
session needs one of its own (1013 with ``CAPACITY_REACHED`` when none is free,
``WS-CAP-1``), and hands the accepted connection to the variant's ``open``: a plain ``/ws``
session, a resumable one, an attached one or a ``WS /mcp`` socket. The slot it took is
released when ``open`` returns, whatever happened (released earlier by the session itself
as its end is known, ``WS-CAP-2``; releasing twice is a no-op), unless the session may
outlive its connection (:attr:`Capacity.SESSION`): then the session releases it when it ends.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ...core import CloseCode, Error, ErrorCode, Frame, encode_frame
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..hypercorn_adapter.events import INVALID_TEXT_REPLY
from ..lifecycle import ServerPhase
from ..observability import Instruments, peer_of
from ..observability.events import SessionIdentity
from ..session_registry import SessionRegistry, Slot

__all__ = [
    "ACCEPT",
    "AcceptServer",
    "Accepted",
    "Capacity",
    "refuse_at_capacity",
    "refuse_while_closing",
    "serve_connection",
]

#: The answer to a text message that is not UTF-8, sent before the close 1007 (``WS-CLOSE-3``).
INVALID_UTF8_ANSWER: Final = encode_frame(
    Error(ErrorCode.INVALID_JSON.value, "Invalid JSON: the text frame is not valid UTF-8 (WS-CONN-5)")
)
#: The accept message of a ``/ws`` connection (Hypercorn's WebSocket stream reads the extra key).
ACCEPT: Final = {"type": "websocket.accept", INVALID_TEXT_REPLY: INVALID_UTF8_ANSWER}


class AcceptServer(Protocol):
    """What the opening of a connection uses of its server."""

    @property
    def registry(self) -> SessionRegistry: ...

    @property
    def instruments(self) -> Instruments: ...

    def encode(self, frame: Frame, *, session: SessionIdentity | None = None) -> str:
        """The frame's text, checked as the server checks what it sends."""
        ...


class Capacity(enum.Enum):
    """Whether a connection's session needs a capacity slot of its own, and who lets it go."""

    CONNECTION = "connection"  # a new session that ends with its connection: the slot is released when it does
    SESSION = "session"  # a new session that may outlive its connection: it takes the slot over
    BROUGHT = "brought"  # the session already holds one (a resumed or an attached session)


@dataclass(frozen=True, slots=True)
class Accepted:
    """An accepted WebSocket: what a variant's ``open`` serves."""

    scope: dict[str, Any]
    receive: AsgiReceive
    send: AsgiSend
    #: the ``perf_counter()`` of the upgrade
    accepted_at: float
    #: the slot taken for a new session (``None`` under :attr:`Capacity.BROUGHT`; under
    #: :attr:`Capacity.SESSION` the session's to release)
    slot: Slot | None


async def serve_connection(
    ctx: AcceptServer,
    scope: dict[str, Any],
    receive: AsgiReceive,
    send: AsgiSend,
    open_session: Callable[[Accepted], Awaitable[None]],
    *,
    capacity: Capacity = Capacity.CONNECTION,
    subprotocol: str | None = None,
) -> None:
    """Accept the WebSocket, refuse it while closing or at capacity, else ``open_session``."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    accepted_at = time.perf_counter()
    await send(ACCEPT if subprotocol is None else {**ACCEPT, "subprotocol": subprotocol})
    registry = ctx.registry
    if registry.closing:
        await refuse_while_closing(ctx, scope, send)
        return
    slot: Slot | None = None
    if capacity is not Capacity.BROUGHT:
        slot = registry.try_reserve()  # WS-CAP-1
        if slot is None:
            await refuse_at_capacity(ctx, scope, send)
            return
    try:
        await open_session(Accepted(scope, receive, send, accepted_at, slot))
    finally:
        if slot is not None and capacity is Capacity.CONNECTION:
            slot.release()


async def refuse_while_closing(ctx: AcceptServer, scope: dict[str, Any], send: AsgiSend) -> None:
    """A new connection while the server drains: close 1013, try another server
    (``WS-DRAIN-1``); once it is stopping, 1001 (``WS-SHUT-1``)."""
    if ctx.registry.phase is ServerPhase.DRAINING:
        code, reason = CloseCode.TRY_AGAIN_LATER, "server draining"
    else:
        code, reason = CloseCode.GOING_AWAY, "server shutting down"
    ctx.instruments.connection_refused(peer_of(scope), code, reason)
    await close_websocket(send, code, reason)


async def refuse_at_capacity(ctx: AcceptServer, scope: dict[str, Any], send: AsgiSend) -> None:
    """``CAPACITY_REACHED`` then close 1013 (``WS-CAP-1``)."""
    registry = ctx.registry
    active, limit = registry.active_sessions, registry.max_sessions
    refusal = Error(
        ErrorCode.CAPACITY_REACHED.value,
        f"{registry.refusal()}. Cannot accept new connections.",
        {"active_sessions": active, **({} if limit is None else {"max_sessions": limit})},
    )
    await send({"type": "websocket.send", "text": ctx.encode(refusal)})
    ctx.instruments.connection_refused(peer_of(scope), CloseCode.TRY_AGAIN_LATER, "server at capacity")
    await close_websocket(send, CloseCode.TRY_AGAIN_LATER, "server at capacity")
