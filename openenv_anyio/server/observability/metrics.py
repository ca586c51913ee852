"""The server's Prometheus metrics (``GET /metrics``), kept by ``prometheus-client``.

One :class:`ServerMetrics` per server, in its own ``CollectorRegistry`` (several servers in
one process count apart). Under multi-process serving (``PROMETHEUS_MULTIPROC_DIR`` set
before ``prometheus_client`` is imported, see :mod:`.multiprocess`) every worker writes its
values to that directory and :func:`exposition` reads all of them, so one scrape of any
worker sees the whole server.

The hot path (one step) costs one counter increment and two histogram observations; the
labelled children the server uses are looked up once, here, never per request.
"""

from __future__ import annotations

import math
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client import values as _values
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from ...core import CloseCode, ErrorCode
from .multiprocess import multiprocess_directory

__all__ = ["CONTENT_TYPE", "DURATION_BUCKETS", "HAND_OFF_TARGETS", "REQUEST_TYPES", "ServerMetrics", "exposition"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

#: Seconds: from an inline environment's microseconds to a simulator's minute-long step.
DURATION_BUCKETS: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, math.inf,
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
        self.sessions_active = Gauge(
            "openenv_sessions_active",
            "Sessions holding a capacity slot (a resumable session waiting for its client included).",
            registry=registry, multiprocess_mode="livesum",
        )
        self.sessions_capacity = Gauge(
            "openenv_sessions_capacity",
            "Configured session limit (+Inf: no limit); summed over workers.",
            registry=registry, multiprocess_mode="livesum",
        )
        self.sessions_capacity.set(math.inf if capacity is None else capacity)
        self.sessions_closed = Counter(
            "openenv_sessions_closed",
            "/ws connections ended, by the WebSocket close code that ended them "
            "(spec/v1/close-codes.json; sent by the server, or by the client; 1006: dropped without a close frame).",
            ["code"], registry=registry,
        )
        self.steps = Counter("openenv_steps", "step requests answered with an observation.", registry=registry)
        self.resets = Counter("openenv_resets", "reset requests answered with an observation.", registry=registry)
        self.errors = Counter(
            "openenv_errors", "Error frames sent, by error code.", ["code"], registry=registry
        )
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
            ["to"], registry=registry,
        )
        self.step_duration = Histogram(
            "openenv_step_duration_seconds",
            "The environment's own time in step (successful steps).",
            registry=registry, buckets=DURATION_BUCKETS,
        )
        self.request_duration = Histogram(
            "openenv_request_duration_seconds",
            "From a request frame read to its answer written: the environment's time plus the protocol's.",
            ["type"], registry=registry, buckets=DURATION_BUCKETS,
        )
        self.handshake_duration = Histogram(
            "openenv_handshake_duration_seconds",
            "From a /ws upgrade accepted to the session ready to serve (its environment created).",
            registry=registry, buckets=DURATION_BUCKETS,
        )
        self.ui_subscribers = Gauge(
            "openenv_ui_subscribers", "Open /ws/ui connections.", registry=registry, multiprocess_mode="livesum"
        )
        self.ui_frames_dropped = Counter(
            "openenv_ui_frames_dropped",
            "state_update frames a /ws/ui subscriber never got: replaced by a newer one while it was slow.",
            registry=registry,
        )
        # the children the hot path uses, bound once
        self.reset_done = self.resets.inc
        self._count_step = self.steps.inc
        self._observe_step = self.step_duration.observe
        self.observe_request = {kind: self.request_duration.labels(kind).observe for kind in REQUEST_TYPES}
        self._errors = {code.value: self.errors.labels(code.value) for code in ErrorCode}
        self._closed = {int(code): self.sessions_closed.labels(str(int(code))) for code in CloseCode}
        for kind in REQUEST_TYPES:  # every series present from the start (0 until it happens)
            self.request_duration.labels(kind)
        self.handed_over_to = {to: self.handed_over.labels(to).inc for to in HAND_OFF_TARGETS}

    def observe_step_and_count(self, seconds: float) -> None:
        """A step was answered with an observation; the environment took ``seconds``."""
        self._count_step()
        self._observe_step(seconds)

    def error_sent(self, code: str) -> None:
        child = self._errors.get(code)
        if child is None:
            child = self._errors[code] = self.errors.labels(code)
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
