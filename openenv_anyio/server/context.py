"""What every endpoint of one server shares: the factory, settings, registry and UI hub."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import trio

from ..core import Error, Frame, ProtocolError, check_sendable, encode_frame
from ..environment import EnvFactory
from .config import ServerConfig
from .execution.bound_env import BoundEnv, InProcessEnv
from .isolation import IsolatedEnv, ProcessIsolated
from .memory.large_frames import LargeFrames
from .observability import Instruments
from .observability.events import SessionIdentity
from .observability.metrics import ServerMetrics
from .observability.tracing import load_tracer
from .session_registry import SessionRegistry, SharedCapacity
from .ui.hub import UiHub

__all__ = [
    "AtCapacity",
    "OutboundFrameError",
    "ServerContext",
    "log",
    "open_env",
    "session_cap_source",
    "session_limit",
    "session_limit_lowered",
]

log = logging.getLogger("openenv_anyio.server")


class AtCapacity(Exception):
    """No session slot is free for an HTTP request's environment (``HTTP-6``)."""

    def __init__(self, active: int, limit: int | None, why: str) -> None:
        self.active = active
        self.limit = limit
        super().__init__(f"{why}. Retry later.")


class OutboundFrameError(RuntimeError):
    """The server was about to send a frame the spec does not allow (a server bug)."""


def session_limit(factory: EnvFactory, configured: int | None, *, warn: bool = True) -> int | None:
    """The configured limit, capped by the env's ``MAX_CONCURRENT_SESSIONS`` when it has one
    (``warn``: log the lowering, see :func:`session_limit_lowered`)."""
    cap = getattr(factory, "MAX_CONCURRENT_SESSIONS", None)
    if not isinstance(cap, int) or isinstance(cap, bool):
        return configured
    lowered = session_limit_lowered(factory, configured)
    if warn and lowered is not None:
        log.warning("%s", lowered["why"])
    return cap if configured is None else min(configured, cap)


def session_limit_lowered(factory: EnvFactory, configured: int | None) -> dict[str, Any] | None:
    """``{"requested", "in_force", "why"}`` when the environment lowers the configured
    session limit (``/metadata`` carries it as ``max_concurrent_envs``), else None."""
    cap = getattr(factory, "MAX_CONCURRENT_SESSIONS", None)
    if not isinstance(cap, int) or isinstance(cap, bool) or configured is None or configured <= cap:
        return None
    why = f"max concurrent envs {configured} lowered to {cap}: {session_cap_source(factory)}"
    return {"requested": configured, "in_force": cap, "why": why}


def session_cap_source(factory: EnvFactory) -> str:
    """Who caps the sessions: ``Single allows no more (Single.MAX_CONCURRENT_SESSIONS)``, or
    the reason the factory gives itself (``SESSION_LIMIT_REASON``, e.g. an upstream app's
    ``create_app`` argument): the one source of the log's warning and the banner."""
    name = getattr(factory, "__qualname__", None) or type(factory).__name__
    reason = getattr(factory, "SESSION_LIMIT_REASON", None)
    declared = reason if isinstance(reason, str) and reason else f"{name}.MAX_CONCURRENT_SESSIONS"
    return f"{name} allows no more ({declared})"


async def open_env(factory: EnvFactory, config: ServerConfig) -> BoundEnv:
    """A new environment as ``config`` says sessions get theirs: in a process of its own
    for a :class:`~openenv_anyio.server.isolation.ProcessIsolated` factory (``SRV-ISO-1``),
    else on a worker thread or inline (``SRV-EXEC-1``). Raises
    :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` when it cannot be built."""
    if isinstance(factory, ProcessIsolated):
        return await IsolatedEnv.start(factory, step_timeout_s=config.step_timeout_s, grace_s=config.shutdown_grace_s)
    return await InProcessEnv.create(factory, inline=config.inline)


@dataclass(eq=False)
class ServerContext:
    factory: EnvFactory
    config: ServerConfig
    instruments: Instruments = field(init=False)
    registry: SessionRegistry = field(init=False)
    hub: UiHub = field(init=False)
    #: the budget of bytes in flight and the parser thread of large frames (SRV-MEM-1, SRV-MEM-2)
    large_frames: LargeFrames = field(init=False)
    #: what this process's session ids start with (a worker's slot and generation)
    session_prefix: str = ""
    #: the capacity shared with the other workers of the server, when there are any
    shared_capacity: SharedCapacity | None = None
    #: where spans go when ``config.traces`` is on (``None``: OpenTelemetry's global provider)
    tracer_provider: Any = None

    def __post_init__(self) -> None:
        if self.config.isolate == "process":
            self.factory = ProcessIsolated.of(self.factory)
        limit = session_limit(self.factory, self.config.max_concurrent_envs)
        self.instruments = Instruments(
            ServerMetrics(limit) if self.config.metrics else None,
            load_tracer(self.tracer_provider) if self.config.traces else None,
        )
        self.registry = SessionRegistry(
            limit,
            self.shared_capacity,
            self.instruments.count_sessions(lambda: self.registry.sessions),
            stuck_limit=self.config.max_stuck_closes,
            on_stuck_changed=self.instruments.count_stuck_closes(lambda: self.registry.stuck_count()),
        )
        self.hub = UiHub(self.config.max_ui_subscribers, self.instruments)
        self.large_frames = LargeFrames(
            self.config.inflight_limit_bytes, self.config.inflight_wait_s, self.instruments.inflight_bytes_changed
        )

    async def create_env(self) -> BoundEnv:
        """A new environment for a session or a request (:func:`open_env`)."""
        return await open_env(self.factory, self.config)

    def new_session_id(self) -> str:
        """A fresh session id (``EXT-SES-1``; the worker's prefix first, see ``workers``)."""
        return self.session_prefix + uuid.uuid4().hex

    def encode(self, frame: Frame, *, ui: bool = False, session: SessionIdentity | None = None) -> str:
        """The frame's text; checked against the spec's sender view (only the members the
        spec names, COMPAT-2) when ``validate_outbound`` is on.

        An error frame is counted and logged as sent (with ``session``'s identity)."""
        if type(frame) is Error:
            self.instruments.error_sent(frame, session)
        text = encode_frame(frame)
        if self.config.validate_outbound:
            try:
                check_sendable(text, "ui-frame" if ui else "server-frame")
            except ProtocolError as exc:
                raise OutboundFrameError(f"outbound frame breaks the spec: {exc}: {text[:200]}") from exc
        return text

    async def close_env(self, bound: BoundEnv, owner: str) -> None:
        """Close an environment for good, waiting at most ``shutdown_grace_s`` (``WS-CLOSE-2``,
        ``SRV-FAULT-3``); the one way every session and request ends its environment.

        Shielded from the caller's cancellation (the environment is closed whatever
        happened). A ``close()`` still running after the bound is logged and recorded as
        stuck (:meth:`SessionRegistry.stuck`); the environment no longer counts as live.
        """
        grace = self.config.shutdown_grace_s
        # One scope for both: shielded from outside, bounded by its own deadline.
        with trio.CancelScope(shield=True, deadline=trio.current_time() + grace) as bound_scope:
            await bound.aclose()
        if bound_scope.cancelled_caught:
            log.error("%s: close() of environment %s still running after %g s; left running", owner, bound.name, grace)
            self.registry.closing_late(bound, owner)
        self.registry.env_closed()

    @contextlib.asynccontextmanager
    async def fresh_env(self, *, counted: bool = True) -> AsyncIterator[BoundEnv]:
        """A new environment for one HTTP request (or a profile read), closed afterwards.

        ``counted``: the request holds a session slot while its environment lives, so HTTP
        requests share ``max_concurrent_envs`` with sessions (``HTTP-6``); raises
        :class:`AtCapacity` when none is free. Raises
        :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` like a session would.
        """
        slot = self.registry.try_reserve() if counted else None
        if counted and slot is None:
            raise AtCapacity(self.registry.sessions, self.registry.max_sessions, self.registry.refusal())
        try:
            bound = await self.create_env()
            self.registry.env_opened()
            try:
                yield bound
            finally:
                await self.close_env(bound, "HTTP request")
        finally:
            if slot is not None:
                slot.release()
