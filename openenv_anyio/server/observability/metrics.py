"""The server's Prometheus metrics (``GET /metrics``), kept by ``prometheus-client``.

One :class:`ServerMetrics` per server, in its own ``CollectorRegistry`` (several servers in
one process count apart). Under multi-process serving (``PROMETHEUS_MULTIPROC_DIR`` set
before ``prometheus_client`` is imported, see :mod:`.multiprocess`) every worker writes its
values to that directory and :func:`exposition` reads all of them, so one scrape of any
worker sees the whole server.

The hot path (one step) costs one counter increment and two histogram observations. In one
process these three are plain numbers read at scrape time (:mod:`.request_counts`, cheaper
than prometheus-client's locked values); under multi-process serving they are
prometheus-client's own, whose labelled children are looked up once, here, never per request.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client import values as _values
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from ...core import CloseCode, ErrorCode
from .multiprocess import multiprocess_directory
from .request_counts import (
    REQUEST_DURATION_HELP,
    STEP_DURATION_HELP,
    STEPS_HELP,
    DurationCounts,
    RequestCountsCollector,
)

__all__ = ["CONTENT_TYPE", "DURATION_BUCKETS", "HAND_OFF_TARGETS", "REQUEST_TYPES", "ServerMetrics", "exposition"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

#: Seconds: from an inline environment's microseconds to a simulator's minute-long step.
DURATION_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    math.inf,
)

#: The ``to`` label of ``openenv_connections_handed_over_total`` (``workers.routing.Placement``).
HAND_OFF_TARGETS: Final = ("owner", "least_loaded")

#: The ``type`` label of ``openenv_request_duration_seconds``: the client frames answered.
REQUEST_TYPES: Final = ("reset", "step", "state")


class ServerMetrics:
    """Every metric of one server. Methods are called on the server's trio thread."""

    def __init__(self, capacity: int | None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        if multiprocess_directory() is None:
            ProcessCollector(registry=self.registry)
        elif not getattr(_values.ValueClass, "_multiprocess", False):
            raise RuntimeError(
                "PROMETHEUS_MULTIPROC_DIR is set but prometheus_client was imported without it "
                "(a worker forked from a process that had imported it?): start workers as new "
                "interpreters after openenv_anyio.server.observability.multiprocess.enable()"
            )
        registry = self.registry
        local = multiprocess_directory() is None
        self.sessions_active = Gauge(
            "openenv_sessions_active",
            "Sessions holding a capacity slot (a resumable session waiting for its client included).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.sessions_capacity = Gauge(
            "openenv_sessions_capacity",
            "Configured session limit (+Inf: no limit); summed over workers.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.sessions_capacity.set(math.inf if capacity is None else capacity)
        self.sessions_closed = Counter(
            "openenv_sessions_closed",
            "/ws connections ended, by the WebSocket close code that ended them "
            "(spec/v1/close-codes.json; sent by the server, or by the client; 1006: dropped without a close frame).",
            ["code"],
            registry=registry,
        )
        self.sessions_opened = Counter(
            "openenv_sessions_opened",
            "Sessions opened, by kind (plain: /ws or WS /mcp; resumable; hosted: POST /mcp).",
            ["kind"],
            registry=registry,
        )
        self.sessions_ended = Counter(
            "openenv_sessions_ended",
            "Sessions ended for good, by kind and outcome (closed, expired, shutdown, handed_over).",
            ["kind", "outcome"],
            registry=registry,
        )
        self.sessions_exported = Counter(
            "openenv_sessions_exported",
            "Sessions a draining server wrote to its session store, by how their environment comes back "
            "(snapshot, replay, none).",
            ["way"],
            registry=registry,
        )
        self.sessions_imported = Counter(
            "openenv_sessions_imported",
            "Sessions taken from the session store and brought back, by way (snapshot: restored; replay: replayed).",
            ["way"],
            registry=registry,
        )
        self.sessions_lost = Counter(
            "openenv_sessions_lost",
            "Sessions that could not outlive their server, by cause (not_restorable, snapshot_failed, "
            "restore_failed, replay_mismatch, store_unavailable, record_unreadable, expired).",
            ["cause"],
            registry=registry,
        )
        self.resets = Counter("openenv_resets", "reset requests answered with an observation.", registry=registry)
        self.errors = Counter("openenv_errors", "Error frames sent, by error code.", ["code"], registry=registry)
        self.resumes = Counter(
            "openenv_resumes", "Sessions taken over by a new connection with their resume token.", registry=registry
        )
        self.replays = Counter(
            "openenv_request_replays",
            "Requests answered from the session's ledger (a repeated request_id), not run again.",
            registry=registry,
        )
        self.handed_over = Counter(
            "openenv_connections_handed_over",
            "Connections a worker of `serve --workers` handed to another worker, by why: `owner` (a resume "
            "whose session lives there) or `least_loaded` (a new session, to spread sessions).",
            ["to"],
            registry=registry,
        )
        self.handshake_duration = Histogram(
            "openenv_handshake_duration_seconds",
            "From a /ws upgrade accepted to the session ready to serve (its environment created).",
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self.inflight_bytes = Gauge(
            "openenv_inflight_bytes",
            "Bytes of large inbound frames and request bodies (over 1 MiB) held against the server's budget "
            "(--max-inflight-bytes, SRV-MEM-1): reserved when they start arriving, given back once parsed.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.env_closes_stuck = Gauge(
            "openenv_env_closes_stuck",
            "Environments whose close() outlived the shutdown grace period and still runs, each holding "
            "a thread (SRV-FAULT-3); at --max-stuck-closes the server takes no new session until one returns.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.ui_subscribers = Gauge(
            "openenv_ui_subscribers", "Open /ws/ui connections.", registry=registry, multiprocess_mode="livesum"
        )
        self.ui_frames_dropped = Counter(
            "openenv_ui_frames_dropped",
            "state_update frames a /ws/ui subscriber never got: replaced by a newer one while it was slow.",
            registry=registry,
        )
        self.reset_done = self.resets.inc
        self._errors = {code.value: self.errors.labels(code.value) for code in ErrorCode}
        self._closed = {int(code): self.sessions_closed.labels(str(int(code))) for code in CloseCode}
        self._opened: dict[str, Any] = {}  # by kind
        self._ended: dict[tuple[str, str], Any] = {}  # by kind and outcome
        self.handed_over_to = {to: self.handed_over.labels(to).inc for to in HAND_OFF_TARGETS}
        # the hot path: steps, their durations, request durations (every request type's series
        # present from the start, 0 until it happens)
        self.observe_step_and_count: Callable[[float], None]
        self.observe_request: dict[str, Callable[[float], None]]
        if local:
            steps = DurationCounts(DURATION_BUCKETS)
            self._request_counts = {kind: DurationCounts(DURATION_BUCKETS) for kind in REQUEST_TYPES}
            registry.register(RequestCountsCollector(steps, self._request_counts))
            self.observe_step_and_count = steps.observe  # the step count is the histogram's count
            self._request_duration = None
        else:
            self._request_duration = Histogram(
                "openenv_request_duration_seconds",
                REQUEST_DURATION_HELP,
                ["type"],
                registry=registry,
                buckets=DURATION_BUCKETS,
            )
            self._steps = Counter("openenv_steps", STEPS_HELP, registry=registry)
            self._step_duration = Histogram(
                "openenv_step_duration_seconds", STEP_DURATION_HELP, registry=registry, buckets=DURATION_BUCKETS
            )
            self.observe_step_and_count = self._count_and_observe_step
        self.observe_request = {kind: self.request_observer(kind) for kind in REQUEST_TYPES}

    def read_sessions_when_scraped(self, count: Callable[[], int]) -> bool:
        """In one process ``openenv_sessions_active`` reads ``count()`` at each scrape (no
        update per session); under multi-process serving the value must be in
        prometheus-client's files for another worker's scrape, so it is set on every change.
        Whether it reads ``count()``."""
        if multiprocess_directory() is not None:
            return False
        self.sessions_active.set_function(count)
        return True

    def read_stuck_closes_when_scraped(self, count: Callable[[], int]) -> bool:
        """``openenv_env_closes_stuck`` read at each scrape, as :meth:`read_sessions_when_scraped`."""
        if multiprocess_directory() is not None:
            return False
        self.env_closes_stuck.set_function(count)
        return True

    def _count_and_observe_step(self, seconds: float) -> None:
        """A step was answered with an observation; the environment took ``seconds``."""
        self._steps.inc()
        self._step_duration.observe(seconds)

    def request_observer(self, kind: str) -> Callable[[float], None]:
        """What records a request of type ``kind`` answered after so many seconds (its
        series appears on first use; the server binds one per type and keeps it)."""
        if self._request_duration is not None:
            return self._request_duration.labels(kind).observe
        series = self._request_counts.get(kind)
        if series is None:
            series = self._request_counts[kind] = DurationCounts(DURATION_BUCKETS)
        return series.observe

    def error_sent(self, code: str) -> None:
        child = self._errors.get(code)
        if child is None:
            child = self._errors[code] = self.errors.labels(code)
        child.inc()

    def session_opened(self, kind: str) -> None:
        child = self._opened.get(kind)
        if child is None:
            child = self._opened[kind] = self.sessions_opened.labels(kind)
        child.inc()

    def session_ended(self, kind: str, outcome: str) -> None:
        child = self._ended.get((kind, outcome))
        if child is None:
            child = self._ended[(kind, outcome)] = self.sessions_ended.labels(kind, outcome)
        child.inc()

    def session_closed(self, code: int) -> None:
        child = self._closed.get(code)
        if child is None:  # a code the peer chose (4000-4999), outside the registry
            child = self._closed[code] = self.sessions_closed.labels(str(code))
        child.inc()


def exposition(metrics: ServerMetrics) -> bytes:
    """The text a scrape gets: this server's metrics, or every worker's under multi-process
    serving."""
    directory = multiprocess_directory()
    if directory is None:
        return generate_latest(metrics.registry)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
