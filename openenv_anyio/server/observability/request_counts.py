"""The per-request metrics of a one-process server, counted as plain numbers.

Every step updates ``openenv_steps_total``, ``openenv_step_duration_seconds`` and
``openenv_request_duration_seconds{type="step"}``. prometheus-client's ``Counter.inc`` and
``Histogram.observe`` take a lock for each value they change and check the metric's state
on every call: several locks and Python calls per step, a visible share of the server's
work per step with an inline environment (bench/README.md, "Server CPU per step"). Here an
observation is a bucket index and two additions, made on the server's trio thread;
prometheus-client reads the numbers when ``/metrics`` is scraped (on that same thread),
through its public custom-collector interface (:class:`RequestCountsCollector`), under the
same names, labels, buckets, help texts and ``_created`` series as its own metric objects
would give.

Only for one process: under multi-process serving, values must be in prometheus-client's
memory-mapped files for another worker's scrape to see them, so
:class:`~.metrics.ServerMetrics` keeps its ``Counter`` and ``Histogram`` there.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Final

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = ["DurationCounts", "RequestCountsCollector"]

STEPS_HELP: Final = "step requests answered with an observation."
STEP_DURATION_HELP: Final = "The environment's own time in step (successful steps)."
REQUEST_DURATION_HELP: Final = (
    "From a request frame read to its answer written: the environment's time plus the protocol's."
)


class DurationCounts:
    """One histogram series: how many observations fell in each bucket, and their sum."""

    __slots__ = ("bounds", "counts", "sum", "created")

    def __init__(self, bounds: Sequence[float]) -> None:
        #: the buckets' upper bounds, ascending, the last one ``+Inf``
        self.bounds = tuple(bounds)
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, seconds: float) -> None:
        """One observation (it falls in the first bucket whose bound is at least it)."""
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        """The ``le`` buckets as Prometheus exposes them (cumulative counts)."""
        total = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip(self.bounds, self.counts):
            total += count
            buckets.append((floatToGoString(bound), total))  # type: ignore[no-untyped-call]
        return buckets


class RequestCountsCollector(Collector):
    """Exposes the step counts and request durations kept in :class:`DurationCounts`.

    ``openenv_steps_total`` is the step histogram's count: one observation per step
    answered with an observation, as the counter counted.
    """

    def __init__(self, steps: DurationCounts, requests: dict[str, DurationCounts]) -> None:
        self._steps = steps
        #: ``type`` label -> its series (new types are added by the server as they appear)
        self._requests = requests

    def collect(self) -> Iterator[Metric]:
        steps = self._steps
        counter = CounterMetricFamily("openenv_steps", STEPS_HELP, value=steps.count, created=steps.created)
        yield counter
        histogram = HistogramMetricFamily("openenv_step_duration_seconds", STEP_DURATION_HELP)
        _add(histogram, {}, steps)
        yield histogram
        requests = HistogramMetricFamily("openenv_request_duration_seconds", REQUEST_DURATION_HELP, labels=["type"])
        for kind, series in self._requests.items():
            _add(requests, {"type": kind}, series)
        yield requests


def _add(family: HistogramMetricFamily, labels: dict[str, str], series: DurationCounts) -> None:
    family.add_metric(list(labels.values()), series.cumulative(), series.sum)
    family.add_sample(family.name + "_created", labels, series.created)
