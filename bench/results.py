"""What a scenario produces: rows of side-by-side measurements, each a median of runs."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.sessions import RunResult


@dataclass
class Measurement:
    """One variant (client -> server pair) of a row, aggregated over its runs."""

    variant: str
    metrics: dict[str, float] = field(default_factory=dict)
    runs: int = 0
    errors: int = 0
    note: str = ""
    unavailable: str = ""  # why it did not run, if it did not

    @property
    def ok(self) -> bool:
        return not self.unavailable and self.runs > 0


@dataclass
class Row:
    """One line of comparison: a case of a scenario measured on several variants."""

    scenario: str
    case: str
    primary: str  # the metric the ratio column compares
    baseline: str  # the variant the others are divided by
    higher_is_better: bool = True
    measurements: list[Measurement] = field(default_factory=list)
    note: str = ""
    complete_only: bool = False  # no ratio when either side had failures (they change the figure)

    def measurement(self, variant: str) -> Measurement | None:
        return next((m for m in self.measurements if m.variant == variant), None)

    def ratio(self, variant: str) -> float:
        """``variant``'s primary metric divided by the baseline's (NaN when either is missing)."""
        this, base = self.measurement(variant), self.measurement(self.baseline)
        if this is None or base is None or not this.ok or not base.ok:
            return math.nan
        if self.complete_only and (this.errors or base.errors):
            return math.nan
        a, b = this.metrics.get(self.primary, math.nan), base.metrics.get(self.primary, math.nan)
        return a / b if b else math.nan

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratios"] = {
            m.variant: _finite(self.ratio(m.variant)) for m in self.measurements if m.variant != self.baseline
        }
        for m in data["measurements"]:
            m["metrics"] = {k: _finite(v) for k, v in m["metrics"].items()}
        return data


def _finite(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else round(value, 4)


def median_metrics(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per-metric median over runs (NaN values ignored)."""
    keys = {k for run in runs for k in run}
    out: dict[str, float] = {}
    for key in sorted(keys):
        values = [run[key] for run in runs if key in run and not math.isnan(run[key])]
        out[key] = statistics.median(values) if values else math.nan
    return out


def throughput_metrics(result: RunResult) -> dict[str, float]:
    """steps/s and p50/p99 step latency (ms) of one run."""
    return {
        "steps_per_s": result.steps_per_s,
        "p50_ms": result.percentile_ms(50),
        "p99_ms": result.percentile_ms(99),
    }
