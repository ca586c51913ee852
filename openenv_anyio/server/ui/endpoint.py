"""The ``/ws/ui`` endpoint: a read-only stream of ``state_update`` frames (section 8).

Two tasks per subscriber: one sends the pending updates (latest per session), one reads and
drops whatever the subscriber sends (``UI-1``) and notices when it leaves. A subscriber that
stops reading only stalls its own sender task; sessions keep stepping (``UI-4``).
``/ws/ui?session=ID`` watches one session (``UI-3``); ``/ws/ui?dashboard=1`` makes the
subscriber a dashboard (``UI-7``, ``UI-8``). What a subscriber reads depends on the role the
access guard granted (``SEC-UI-1``): an operator every session in full; an agent every
session's progress, and the payloads only of the sessions whose resume tokens it presented
(``OpenEnv-Resume-Token``, comma-separated).

Under ``serve --workers N`` the subscriber also gets the other workers' updates
(:class:`OtherWorkers`, ``workers.dashboard_relay``), sent by a third task of the
connection (one per other worker), so it sees every worker's sessions, each once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol
from urllib.parse import parse_qs

import trio

from ...core import RESUME_TOKEN_HEADER, SUBPROTOCOL, CloseCode, Frame, SessionClosed, StateUpdate
from ..access.guard import role_of
from ..access.policy import Role
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..config import ServerConfig
from ..hypercorn_adapter.events import INVALID_TEXT_REPLY
from ..ping_schedule import PingSchedule
from ..session_registry import SessionRegistry
from .hub import UiHub

__all__ = ["RELAYED_HEADER", "OtherWorkers", "serve_ui"]

#: Marks a ``/ws/ui`` connection one worker opened to another for a subscriber of its own:
#: served from that worker's hub only (``workers.dashboard_relay``).
RELAYED_HEADER: Final = b"openenv-anyio-relayed"


class OtherWorkers(Protocol):
    """The other workers of a ``serve --workers N`` server, as a ``/ws/ui`` subscriber sees them."""

    async def relay(self, scope: dict[str, Any], deliver: Callable[[str], Awaitable[None]]) -> None:
        """Pass every frame the other workers send a subscriber like ``scope``'s to
        ``deliver``, until cancelled."""
        ...


def relayed(scope: dict[str, Any]) -> bool:
    """Whether another worker opened this connection for a subscriber of its own."""
    return any(name.lower() == RELAYED_HEADER for name, _ in scope.get("headers") or ())


class UiServer(Protocol):
    """What the ``/ws/ui`` endpoint uses of its server."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def hub(self) -> UiHub: ...

    @property
    def registry(self) -> SessionRegistry: ...

    def encode(self, frame: Frame, *, ui: bool = False) -> str:
        """The frame's text, checked as the server checks what it sends."""
        ...


class _UiConnection:
    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.shutdown = False

    def request_shutdown(self) -> None:
        self.shutdown = True
        self.scope.cancel()

    def abort(self) -> None:
        self.request_shutdown()


async def _drain(receive: AsgiReceive, send: AsgiSend, pings: PingSchedule, done: trio.CancelScope) -> None:
    """Read and drop the subscriber's frames (UI-1); end the connection when it leaves or
    stops answering pings (WS-PING-1)."""
    try:
        while True:
            with trio.CancelScope(deadline=pings.deadline()) as wait:
                message = await receive()
            now = trio.current_time()
            if wait.cancelled_caught:
                if not await pings.on_deadline(send, now):
                    return
            elif message["type"] == "websocket.disconnect":
                return
            else:
                pings.heard(now)
    finally:
        done.cancel()


_TOKEN_HEADER = RESUME_TOKEN_HEADER.lower().encode("ascii")
_MAX_PRESENTED = 64


class TokenHolder(Protocol):
    """A session found by its resume token."""

    @property
    def session_id(self) -> str: ...


class SessionsByToken(Protocol):
    """Where a subscriber's resume tokens are looked up (the resumable sessions)."""

    def find_resumable(self, presented: str) -> TokenHolder | None: ...


def readable_sessions(sessions: SessionsByToken, scope: dict[str, Any]) -> frozenset[str] | None:
    """The sessions whose payloads this subscriber may read; ``None``: all (``SEC-UI-1``)."""
    if role_of(scope) is Role.OPERATOR:
        return None
    readable: set[str] = set()
    for name, value in scope.get("headers") or ():
        if name.lower() != _TOKEN_HEADER:
            continue
        for presented in value.decode("latin-1").split(",")[:_MAX_PRESENTED]:
            session = sessions.find_resumable(presented.strip())
            if session is not None:
                readable.add(session.session_id)
    return frozenset(readable)


async def serve_ui(
    ctx: UiServer,
    sessions: SessionsByToken,
    others: OtherWorkers | None,
    scope: dict[str, Any],
    receive: AsgiReceive,
    send: AsgiSend,
) -> None:
    """ASGI handler of one ``/ws/ui`` connection (``others``: the other workers, whose
    updates it also gets, unless another worker opened it)."""
    if (await receive())["type"] != "websocket.connect":
        return
    # A browser that carries its token in a subprotocol offer needs one selected (SEC-TOKEN-1).
    offered = SUBPROTOCOL in (scope.get("subprotocols") or ())
    await send(
        {"type": "websocket.accept", "subprotocol": SUBPROTOCOL if offered else None, INVALID_TEXT_REPLY: None}
    )  # WS-CLOSE-3
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    session_filter = query.get("session", [None])[0]
    dashboard = query.get("dashboard", [""])[0] == "1"
    subscriber = ctx.hub.subscribe(session_filter, dashboard=dashboard, readable=readable_sessions(sessions, scope))
    if subscriber is None:  # UI-6
        limit = ctx.hub.max_subscribers
        await close_websocket(
            send, CloseCode.TRY_AGAIN_LATER, f"too many /ws/ui subscribers (max_ui_subscribers={limit})"
        )
        return
    connection = _UiConnection()
    ctx.registry.attach(connection)
    try:
        with connection.scope:
            async with trio.open_nursery() as nursery:
                pings = PingSchedule(ctx.config.ping_interval_s, ctx.config.ping_timeout_s)
                nursery.start_soon(_drain, receive, send, pings, nursery.cancel_scope)
                if others is not None and not relayed(scope):
                    sending = trio.Lock()  # one frame at a time: the updates of this worker and of the others

                    async def send_text(text: str) -> None:
                        async with sending:
                            await send({"type": "websocket.send", "text": text})

                    nursery.start_soon(others.relay, scope, send_text)
                else:

                    async def send_text(text: str) -> None:
                        await send({"type": "websocket.send", "text": text})

                def encode(episode_state: dict[str, Any]) -> str:
                    return ctx.encode(StateUpdate(episode_state), ui=True)

                skipped = ctx.hub.update_unencodable
                reads = subscriber.reads
                while True:
                    for item in await subscriber.take():
                        if isinstance(item, SessionClosed):
                            text: str | None = ctx.encode(item, ui=True)
                        else:
                            text = item.encoded(
                                encode, skipped, dashboard=dashboard, redacted=not reads(item.session_id)
                            )
                        if text is not None:  # UI-5: an unencodable update costs only itself
                            await send_text(text)
        if connection.shutdown:
            with trio.move_on_after(1.0):
                await close_websocket(send, CloseCode.GOING_AWAY, "server shutting down")
    finally:
        ctx.hub.unsubscribe(subscriber)
        ctx.registry.detach(connection)
