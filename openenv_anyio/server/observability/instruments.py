"""What the server tells its operators: the one interface its endpoints call.

:class:`Instruments` fans each happening out to the Prometheus metrics (:mod:`.metrics`),
the structured log events (:mod:`.events`) and, when enabled, the OpenTelemetry spans
(:mod:`.tracing`). Per-request calls (:meth:`Instruments.step_done`,
:meth:`Instruments.request_done`) touch metrics only and are bound once, so they cost a
method call and the metric update; lifecycle calls also log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

from ...core import Error, SessionOutcome
from .events import SessionIdentity, error_level, log_event
from .metrics import ServerMetrics
from .tracing import SessionTracer

__all__ = ["Instruments", "peer_of"]

perf_counter: Final = time.perf_counter


def peer_of(scope: dict[str, Any]) -> str | None:
    """``host:port`` of the ASGI scope's client (``None`` when the server does not know)."""
    client = scope.get("client")
    if not client:
        return None
    host, port = client[0], client[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def _ignore_count(active: int) -> None:
    return None


class Instruments:
    """Metrics (``None``: off), log events, and spans (``tracer`` ``None``: off) of one server."""

    def __init__(self, metrics: ServerMetrics | None, tracer: SessionTracer | None) -> None:
        self.metrics = metrics
        self.tracer = tracer
        self.step_done: Callable[[float], None]
        if metrics is None:
            self.step_done = self._ignore_duration
            self.reset_done = self._ignore
            self._observe_request: dict[str, Any] = {}
        else:
            self.step_done = metrics.observe_step_and_count
            self.reset_done = metrics.reset_done
            self._observe_request = dict(metrics.observe_request)

    @staticmethod
    def _ignore() -> None:
        return None

    @staticmethod
    def _ignore_duration(seconds: float) -> None:
        return None

    # -- per request (hot path) ------------------------------------------------------------

    def request_done(self, kind: str, seconds: float) -> None:
        """A request (``reset``, ``step``, ``state``; another surface's, e.g. a tool call)
        was answered ``seconds`` after it was read."""
        observe = self._observe_request.get(kind)
        if observe is None:
            if self.metrics is None:
                return
            observe = self._observe_request[kind] = self.metrics.request_observer(kind)
        observe(seconds)

    def replayed(self) -> None:
        """A request was answered from the session's ledger (repeated ``request_id``)."""
        if self.metrics is not None:
            self.metrics.replays.inc()

    def error_sent(self, frame: Error, session: SessionIdentity | None) -> None:
        """An error frame is about to be sent."""
        if self.metrics is not None:
            self.metrics.error_sent(frame.code)
        log_event(
            error_level(frame.code),
            "error_sent",
            session,
            code=frame.code,
            message=frame.message,
            request_id=frame.request_id,
        )
        if self.tracer is not None:
            self.tracer.mark_current_error(frame.code, frame.message)

    # -- session lifecycle -----------------------------------------------------------------

    def count_sessions(self, count: Callable[[], int]) -> Callable[[int], None]:
        """What the session registry calls on every change of the number of sessions holding
        a capacity slot, which ``count()`` reads: nothing when the gauge reads ``count()``
        itself when scraped (one process; a ``Gauge.set`` per change is a lock and a few
        Python calls, twice per session), else the gauge's ``set`` (multi-process serving)."""
        metrics = self.metrics
        if metrics is None or metrics.read_sessions_when_scraped(count):
            return _ignore_count
        return metrics.sessions_active.set

    def count_stuck_closes(self, count: Callable[[], int]) -> Callable[[int], None]:
        """What the session registry calls on every change of the number of environments
        whose ``close()`` outlived its bound (``openenv_env_closes_stuck``), as
        :meth:`count_sessions` does for sessions."""
        metrics = self.metrics
        if metrics is None or metrics.read_stuck_closes_when_scraped(count):
            return _ignore_count
        return metrics.env_closes_stuck.set

    def session_opened(self, session: SessionIdentity, accepted_at: float | None, *, kind: str) -> None:
        """A session is ready to serve (``kind``: plain, resumable or hosted); ``accepted_at`` is
        the ``perf_counter()`` of its connection's upgrade (``None``: opened over HTTP)."""
        if self.metrics is not None:
            self.metrics.session_opened(kind)
            if accepted_at is not None:
                self.metrics.handshake_duration.observe(perf_counter() - accepted_at)
        log_event(logging.INFO, "session_opened", session, kind=kind, resumable=kind == "resumable")

    def session_resumed(self, session: SessionIdentity, accepted_at: float) -> None:
        """A new connection took a session over with its resume token."""
        if self.metrics is not None:
            self.metrics.resumes.inc()
            self.metrics.handshake_duration.observe(perf_counter() - accepted_at)
        log_event(logging.INFO, "session_resumed", session)

    def session_parked(self, session: SessionIdentity, grace_s: float, close_code: int) -> None:
        """A resumable session's connection dropped; the session waits ``grace_s`` for its client."""
        if self.metrics is not None:
            self.metrics.session_closed(close_code)
        # close codes arrive as wsproto's or our own IntEnum; every log line carries the number
        log_event(logging.INFO, "session_parked", session, close_code=int(close_code), grace_s=grace_s)

    def session_handed_over(self, session: SessionIdentity, close_code: int) -> None:
        """A resumable session's connection was closed: a newer one took the session over."""
        if self.metrics is not None:
            self.metrics.session_closed(close_code)
        log_event(logging.INFO, "session_handed_over", session, close_code=int(close_code))

    # -- sessions kept in a session store (EXT-HAND-1 .. EXT-HAND-4) ------------------------

    def session_exported(self, session: SessionIdentity, way: str) -> None:
        """A draining server wrote ``session`` to its store (``way``: how its environment
        comes back: snapshot, replay, or none)."""
        if self.metrics is not None:
            self.metrics.sessions_exported.labels(way).inc()
        log_event(logging.INFO, "session_exported", session, restore=way)

    def session_imported(self, session: SessionIdentity, way: str, step_count: int) -> None:
        """A session was taken from the store and its environment brought back by ``way``."""
        if self.metrics is not None:
            self.metrics.sessions_imported.labels(way).inc()
        log_event(logging.INFO, "session_imported", session, restore=way, step_count=step_count)

    def session_lost(
        self, session: SessionIdentity | None, cause: str, detail: str, *, session_id: str | None = None
    ) -> None:
        """A session could not outlive its server (``cause``: a ``LostCause`` value); said on
        one line with ``detail``."""
        if self.metrics is not None:
            self.metrics.sessions_lost.labels(cause).inc()
        fields: dict[str, Any] = {"cause": cause, "detail": detail}
        if session is None and session_id is not None:
            fields["session_id"] = session_id
        log_event(logging.WARNING, "session_lost", session, **fields)

    def episode_reset(self, session: SessionIdentity, request_id: str | None) -> None:
        log_event(logging.DEBUG, "episode_reset", session, request_id=request_id)

    def session_ended(
        self,
        session: SessionIdentity,
        *,
        kind: str,
        outcome: SessionOutcome,
        close_code: int | None,
        reason: str | None,
    ) -> None:
        """A session ended for good with ``outcome``; ``close_code`` and ``reason`` (a
        ``SessionEnd``'s value): how its last connection ended, when it ended with it."""
        if self.metrics is not None:
            self.metrics.session_ended(kind, outcome.value)
            if close_code is not None:
                self.metrics.session_closed(close_code)
        fields: dict[str, Any] = {"kind": kind, "outcome": outcome.value, "reason": reason or outcome.value}
        if close_code is not None:
            fields["close_code"] = int(close_code)
        log_event(logging.INFO, "session_closed", session, **fields)

    def session_detached(self, session: SessionIdentity, close_code: int, reason: str) -> None:
        """The WebSocket attached to a hosted session closed; the session goes on (``MCP-SES-4``)."""
        if self.metrics is not None:
            self.metrics.session_closed(close_code)
        log_event(logging.INFO, "session_detached", session, close_code=int(close_code), reason=reason)

    def connection_refused(self, peer: str | None, close_code: int, reason: str) -> None:
        """A ``/ws`` connection was closed before it had a session (capacity, draining, ...)."""
        if self.metrics is not None:
            self.metrics.session_closed(close_code)
        code = int(close_code)
        log_event(logging.INFO, "connection_refused", None, peer=peer, close_code=code, reason=reason)

    # -- worker processes ------------------------------------------------------------------

    def connection_handed_over(self, to: str) -> None:
        """This worker handed an accepted connection to another worker (``to``: ``owner``
        or ``least_loaded``, see ``workers.routing``)."""
        if self.metrics is not None:
            self.metrics.handed_over_to[to]()

    # -- large frames (SRV-MEM-1) ------------------------------------------------------------

    def inflight_bytes_changed(self, held: int) -> None:
        if self.metrics is not None:
            self.metrics.inflight_bytes.set(held)

    # -- /ws/ui ----------------------------------------------------------------------------

    def ui_subscribers_changed(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.ui_subscribers.set(count)

    def ui_frame_dropped(self) -> None:
        if self.metrics is not None:
            self.metrics.ui_frames_dropped.inc()

    # -- the server ------------------------------------------------------------------------

    def server_event(self, event: str, **fields: Any) -> None:
        """``server_started``, ``server_draining``, ``server_stopped``."""
        log_event(logging.INFO, event, None, **fields)
