"""How a throughput row is measured: profiles, variants (client -> server pairs), runs.

Variants are named ``CLIENT->SERVER`` for crossed pairs; ``ours`` and ``openenv`` are each
stack's own client against its own server. Runs are interleaved A B A B ... so drift hits
every variant alike, and each figure is the median of the runs.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from bench import sessions
from bench.pool import ServerPool
from bench.results import Measurement, Row, median_metrics, throughput_metrics
from bench.stacks import StackUnavailable
from bench.stacks.registry import client_stack


@dataclass(frozen=True)
class Profile:
    """How much to measure: ``quick`` (about a minute) or the full run."""

    quick: bool
    repeats: int
    duration_s: float
    session_counts: tuple[int, ...]
    big_steps: int
    idle_sessions: int
    idle_repeats: int
    scaling_sessions: tuple[int, ...]
    scaling_cap_s: float
    crossed: bool  # run the crossed pairs everywhere (quick: only in scenarios 1 and 6)

    @classmethod
    def make(cls, quick: bool) -> Profile:
        if quick:
            return cls(True, 3, 0.25, (1, 16), 4, 250, 1, (64, 256), 30.0, False)
        return cls(False, 5, 2.0, (1, 16, 64), 20, 1000, 3, (512, 1024, 2048, 4096), 120.0, True)


@dataclass
class Context:
    profile: Profile
    pool: ServerPool
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    _warm: set[tuple[str, str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class Variant:
    """One client -> server pair of a row."""

    name: str
    client: str  # client stack: "ours", "openenv", "raw"
    server: str  # server stack or bare echo server
    kind: str  # env kind served
    backend: str | None = None  # client event loop; None = the client's default


def pairs(ours_kind: str, openenv_kind: str, *, crossed: bool = True) -> list[Variant]:
    """ours vs openenv, plus the crossed pairs that show which side carries the difference."""
    variants = [Variant("ours", "ours", "ours", ours_kind), Variant("openenv", "openenv", "openenv", openenv_kind)]
    if crossed:
        variants += [
            Variant("ours->openenv", "ours", "openenv", openenv_kind),
            Variant("openenv->ours", "openenv", "ours", ours_kind),
        ]
    return variants


def run_client(variant: Variant, url: str, n_sessions: int, steps: int, duration_s: float | None) -> sessions.RunResult:
    """One run of ``variant``'s client on its event loop, in this process."""
    module = client_stack(variant.client)
    timeout = (duration_s or 0) + 60.0 + n_sessions * 0.05
    run = functools.partial(module.run_sessions, url, n_sessions, steps, duration_s=duration_s, timeout_s=timeout)
    try:
        return anyio.run(run, backend=variant.backend or module.BACKEND)
    except Exception as exc:  # the run as a whole failed (e.g. its time limit): an error, not a crash
        return sessions.RunResult(n_sessions, errors=[f"{type(exc).__name__}: {exc}"])


def measure_throughput(
    ctx: Context,
    scenario: str,
    case: str,
    variants: list[Variant],
    n_sessions: int,
    *,
    baseline: str,
    steps: int = 1_000_000,
    duration_s: float | None = -1.0,
    extra: Callable[[dict[str, float]], dict[str, float]] | None = None,
    note: str = "",
) -> Row:
    """steps/s and p50/p99 of every available variant, runs interleaved, medians kept."""
    duration = ctx.profile.duration_s if duration_s == -1.0 else duration_s
    row = Row(scenario, case, "steps_per_s", baseline, note=note)
    ready: list[tuple[Variant, str, Measurement]] = []
    ctx.pool.prefetch((v.server, v.kind) for v in variants)
    for variant in variants:
        measurement = Measurement(variant.name)
        row.measurements.append(measurement)
        try:
            client_stack(variant.client)
            url = ctx.pool.url(variant.server, variant.kind)
        except StackUnavailable as exc:
            measurement.unavailable = str(exc)
            continue
        ready.append((variant, url, measurement))
    runs: dict[str, list[dict[str, float]]] = {v.name: [] for v, _, _ in ready}
    for variant, url, _ in ready:  # warm both ends once (imports, first connections)
        key = (variant.client, variant.backend or "", url)
        if key not in ctx._warm:
            ctx._warm.add(key)
            run_client(variant, url, 1, 3 if steps < 100 else 20, None)
    dead: set[str] = set()
    for _ in range(ctx.profile.repeats):
        for variant, url, measurement in ready:
            if variant.name in dead:
                continue
            result = run_client(variant, url, n_sessions, steps, duration)
            if result.errors:
                measurement.errors += len(result.errors)
                measurement.note = measurement.note or result.errors[0][:120]
                process = ctx.pool.process(variant.server, variant.kind)
                if process is not None and not process.alive():
                    measurement.note = f"server died: {process.last_error_line()[:160]}"
                    dead |= {v.name for v, u, _ in ready if u == url}
                continue  # a run with failed sessions is reported, not averaged in
            metrics = throughput_metrics(result)
            if extra is not None:
                metrics.update(extra(metrics))
            runs[variant.name].append(metrics)
            measurement.runs += 1
    for variant, _, measurement in ready:
        measurement.metrics = median_metrics(runs[variant.name])
        if not measurement.runs:
            measurement.unavailable = measurement.note or "server died earlier in this row"
    ctx.log(f"  [{scenario}] {case}: " + ", ".join(_brief(m) for m in row.measurements))
    return row


def _brief(m: Measurement) -> str:
    if not m.ok:
        return f"{m.variant} n/a"
    value = m.metrics.get("steps_per_s", math.nan)
    return f"{m.variant} {value:,.0f}/s"
