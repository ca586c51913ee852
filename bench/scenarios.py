"""The nine scenarios: each returns rows of side-by-side measurements.

Variants are named ``CLIENT->SERVER`` for crossed pairs; ``ours`` and ``openenv`` are each
stack's own client against its own server. Runs are interleaved A B A B ... so drift hits
every variant alike, and each figure is the median of the runs.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench import sessions
from bench.envs import BIG_OBSERVATION_BYTES
from bench.pool import ServerPool, start_server
from bench.procs import ServerProcess, kill_group, spawn
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


# --- scenarios 1-6: throughput ---------------------------------------------------------


def scenario_sync(ctx: Context) -> list[Row]:
    """1. A sync env run the default way: every call hops to a thread on both sides."""
    return [
        measure_throughput(ctx, "1", f"sync env, thread hop, {n} sessions", pairs("echo", "echo"), n, baseline="openenv")
        for n in ctx.profile.session_counts
    ]


def scenario_inline(ctx: Context) -> list[Row]:
    """2. The same fast sync env declared NON_BLOCKING (inline on our loop) vs OpenEnv's hop."""
    return [
        measure_throughput(
            ctx, "2", f"non-blocking inline vs their hop, {n} sessions", pairs("echo_inline", "echo", crossed=ctx.profile.crossed), n, baseline="openenv"
        )
        for n in ctx.profile.session_counts[:2]
    ]


def scenario_async(ctx: Context) -> list[Row]:
    """3. An env with async methods: both servers await it on their event loop."""
    return [
        measure_throughput(ctx, "3", f"async env, {n} sessions", pairs("echo_async", "echo_async", crossed=ctx.profile.crossed), n, baseline="openenv")
        for n in ctx.profile.session_counts[:2]
    ]


def scenario_backends(ctx: Context) -> list[Row]:
    """4. Our client on asyncio vs on trio (against our server, env inline)."""
    variants = [
        Variant("ours/asyncio", "ours", "ours", "echo_inline", "asyncio"),
        Variant("ours/trio", "ours", "ours", "echo_inline", "trio"),
    ]
    if ctx.profile.crossed:
        variants += [
            Variant("ours/asyncio->openenv", "ours", "openenv", "echo_async", "asyncio"),
            Variant("ours/trio->openenv", "ours", "openenv", "echo_async", "trio"),
        ]
    return [
        measure_throughput(ctx, "4", f"our client, asyncio vs trio, {n} sessions", variants, n, baseline="ours/asyncio")
        for n in ctx.profile.session_counts[:2]
    ]


def scenario_ceiling(ctx: Context) -> list[Row]:
    """5. Server ceilings with one raw client: bare echo vs full protocol servers."""
    variants = [
        Variant("echo-hypercorn", "raw", "echo-hypercorn", ""),
        Variant("ours-server", "raw", "ours", "echo_inline"),
        Variant("echo-uvicorn", "raw", "echo-uvicorn", ""),
        Variant("openenv-server", "raw", "openenv", "echo_async"),
    ]
    note = "raw client, no decoding; ours overhead = 1 - ours-server/echo-hypercorn"
    rows = []
    for n in ctx.profile.session_counts[:2]:
        row = measure_throughput(ctx, "5", f"server ceiling, raw client, {n} sessions", variants, n, baseline="echo-hypercorn", note=note)
        ratio = row.ratio("ours-server")
        if not math.isnan(ratio):
            row.note += f"; ours overhead {100 * (1 - ratio):.1f} %"
        ratio = row.ratio("openenv-server") / row.ratio("echo-uvicorn") if row.measurement("echo-uvicorn") else math.nan
        if not math.isnan(ratio):
            row.note += f"; openenv overhead vs its uvicorn echo {100 * (1 - ratio):.1f} %"
        rows.append(row)
    return rows


def scenario_big(ctx: Context) -> list[Row]:
    """6. A 10 MB observation per step (steps/s and MB/s)."""
    megabytes = BIG_OBSERVATION_BYTES / 1e6

    def mb_per_s(metrics: dict[str, float]) -> dict[str, float]:
        return {"mb_per_s": metrics["steps_per_s"] * megabytes}

    return [
        measure_throughput(
            ctx, "6", "10 MB observation, 1 session", pairs("big", "big"), 1,
            baseline="openenv", steps=ctx.profile.big_steps, duration_s=None, extra=mb_per_s,
        )
    ]


# --- scenario 7: memory per idle session ----------------------------------------------


def scenario_idle(ctx: Context) -> list[Row]:
    """7. Server memory per idle session: RSS growth / sessions held open after reset."""
    n = ctx.profile.idle_sessions
    row = Row("7", f"{n} idle sessions, server RSS growth", "kb_per_session", "openenv", higher_is_better=False)
    stacks = ("ours", "openenv")
    runs: dict[str, list[dict[str, float]]] = {s: [] for s in stacks}
    measurements = {s: Measurement(s) for s in stacks}
    row.measurements = list(measurements.values())
    for _ in range(ctx.profile.idle_repeats):
        for stack in stacks:
            m = measurements[stack]
            if m.unavailable:
                continue
            try:
                module = client_stack(stack)
                server = start_server(stack, "echo")
            except StackUnavailable as exc:
                m.unavailable = str(exc)
                continue
            try:
                runs[stack].append(_idle_run(module, server, n))
                m.runs += 1
            finally:
                server.stop()
    for stack, m in measurements.items():
        if runs[stack]:
            m.metrics = median_metrics(runs[stack])
            held = m.metrics.get("sessions_held", n)
            if held < n:
                m.note = f"only {held:.0f} of {n} sessions opened"
    ctx.log(f"  [7] idle: " + ", ".join(f"{m.variant} {m.metrics.get('kb_per_session', math.nan):.0f} kB" for m in row.measurements if m.ok))
    return [row]


def _idle_run(client_module: Any, server: ServerProcess, n: int) -> dict[str, float]:
    """Warm the server with one session, then hold ``n`` and read its RSS growth."""
    url = server.url
    anyio.run(functools.partial(client_module.run_sessions, url, 1, 3), backend=client_module.BACKEND)
    time.sleep(0.3)
    before = server.rss_kb()
    hold = functools.partial(sessions.hold_sessions, client_module.open_session, url, n, server.status)
    status, held = anyio.run(hold, backend=client_module.BACKEND)
    after = status.get("VmRSS", 0)
    return {
        "kb_per_session": (after - before) / max(held, 1),
        "rss_before_mb": before / 1024,
        "rss_after_mb": after / 1024,
        "threads": float(status.get("Threads", 0)),
        "sessions_held": float(held),
    }


# --- scenario 8: validation cost ------------------------------------------------------


def scenario_validation(ctx: Context) -> list[Row]:
    """8. Frame validation cost, measured by ``bench.validation.run(quick)`` when present."""
    try:
        module = importlib.import_module("bench.validation")
    except ModuleNotFoundError as exc:
        if exc.name != "bench.validation":
            raise
        return [Row("8", "frame validation cost", "us", "", note="n/a: bench.validation not present")]
    return validation_rows(module.run(ctx.profile.quick))


def validation_rows(result: Any) -> list[Row]:
    """Rows from what ``bench.validation.run`` returns.

    Understood: a list of ``Row``; a list of mappings with ``case`` and ``method`` (one row
    per case, one measurement per method, numbers as metrics, the reference method as the
    baseline); a mapping of numbers; anything else is shown as a note.
    """
    if isinstance(result, list) and all(isinstance(r, Row) for r in result):
        return result
    if isinstance(result, list) and all(isinstance(r, Mapping) and "case" in r and "method" in r for r in result):
        rows: dict[str, Row] = {}
        for item in result:
            numbers = {str(k): float(v) for k, v in item.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            row = rows.setdefault(str(item["case"]), Row("8", f"validation: {item['case']}", "us", "", higher_is_better=False))
            row.measurements.append(Measurement(str(item["method"]), numbers, runs=1))
        for row in rows.values():
            row.baseline = next((m.variant for m in row.measurements if "reference" in m.variant), "")
        return list(rows.values())
    row = Row("8", "frame validation cost", "", "")
    if isinstance(result, Mapping):
        numbers = {str(k): float(v) for k, v in result.items() if isinstance(v, (int, float))}
        row.measurements.append(Measurement("validation", numbers, runs=1))
    else:
        row.note = str(result)[:500]
    return [row]


# --- scenario 9: OpenEnv's scaling experiment ------------------------------------------


SCALING_STEPS = 3
SESSIONS_PER_WORKER = 1024


def scenario_scaling(ctx: Context) -> list[Row]:
    """9. N sessions at once, each connect + reset + 3 steps of a 1 s blocking sync step."""
    rows = []
    for n in ctx.profile.scaling_sessions:
        case = f"{n} sessions x (connect, reset, 3 x 1 s blocking step)"
        row = Row("9", case, "wall_s", "openenv", higher_is_better=False, complete_only=True)
        row.note = "no wall-time ratio when a side lost sessions"
        for stack in ("openenv", "ours"):
            row.measurements.append(_scaling_run(ctx, stack, n))
        rows.append(row)
        ctx.log(
            f"  [9] {n}: "
            + ", ".join(
                f"{m.variant} wall {m.metrics.get('wall_s', math.nan):.1f} s ok {m.metrics.get('success_pct', math.nan):.0f} %"
                for m in row.measurements
                if m.ok
            )
        )
    return rows


def _scaling_run(ctx: Context, stack: str, n: int) -> Measurement:
    """One burst of ``n`` sessions of ``stack``'s client against a fresh ``stack`` server."""
    m = Measurement(stack)
    try:
        client_stack(stack)
        server = start_server(stack, "sleep", wait=False)
    except StackUnavailable as exc:
        m.unavailable = str(exc)
        return m
    cap = ctx.profile.scaling_cap_s
    workers = max(1, math.ceil(n / SESSIONS_PER_WORKER))
    shares = [n // workers + (1 if i < n % workers else 0) for i in range(workers)]
    procs = []
    peak_rss_kb = peak_threads = 0
    outcomes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        folder = Path(tmp)
        try:
            for i, share in enumerate(shares):  # workers import their client while the server starts
                argv = ["-m", "bench.loadgen", stack, server.url, "--sessions", str(share), "--steps",
                        str(SCALING_STEPS), "--dir", tmp, "--cap", repr(cap), "--out", str(folder / f"out-{i}.json")]
                procs.append(spawn(argv)[0])
            server.wait_ready()
            _wait_for_files(folder, "ready-", procs, timeout_s=60.0)
            start_at = time.time() + 0.2
            (folder / "go.tmp").write_text(repr(start_at))
            (folder / "go.tmp").rename(folder / "go")
            hard_deadline = start_at + cap + 15.0
            while any(p.poll() is None for p in procs) and time.time() < hard_deadline:
                status = server.status()
                peak_rss_kb = max(peak_rss_kb, status.get("VmRSS", 0))
                peak_threads = max(peak_threads, status.get("Threads", 0))
                time.sleep(0.2)
            for path in sorted(folder.glob("out-*.json")):
                outcomes += json.loads(path.read_text())
        except (RuntimeError, TimeoutError) as exc:  # server failed to start, workers never ready
            m.unavailable = str(exc)[:200]
            return m
        finally:
            for proc in procs:
                kill_group(proc, grace_s=2.0)
            server.stop()
    ok = [o["seconds"] for o in outcomes if o["ok"]]
    failures = [o for o in outcomes if not o["ok"]]
    m.runs = 1
    m.errors = n - len(ok)
    if failures:
        m.note = failures[0]["error"][:120]
    elif len(outcomes) < n:
        m.note = f"{n - len(outcomes)} sessions never reported (worker stopped at the cap)"
    finished = [o["seconds"] for o in outcomes]
    m.metrics = {
        "success_pct": 100.0 * len(ok) / n,
        "wall_s": max(finished) if finished else math.nan,
        "p50_s": sessions.percentile(ok, 50),
        "p99_s": sessions.percentile(ok, 99),
        "rss_peak_mb": peak_rss_kb / 1024,
        "threads_peak": float(peak_threads),
    }
    return m


def _wait_for_files(folder: Path, prefix: str, procs: list[Any], *, timeout_s: float) -> None:
    """Until each worker of ``procs`` has created its ``prefix*`` file (TimeoutError if not)."""
    deadline = time.monotonic() + timeout_s
    while len(list(folder.glob(prefix + "*"))) < len(procs):
        if any(proc.poll() is not None for proc in procs):
            raise TimeoutError("a load worker exited before it was ready")
        if time.monotonic() > deadline:
            raise TimeoutError(f"load workers not ready within {timeout_s:.0f} s")
        time.sleep(0.05)


@dataclass(frozen=True)
class Scenario:
    id: str
    slug: str
    title: str
    run: Callable[[Context], list[Row]]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("1", "sync", "sync env, default execution (thread hop both sides)", scenario_sync),
    Scenario("2", "inline", "fast sync env declared non-blocking vs OpenEnv's thread hop", scenario_inline),
    Scenario("3", "async", "async env on both sides", scenario_async),
    Scenario("4", "backends", "our client on asyncio vs trio", scenario_backends),
    Scenario("5", "ceiling", "bare Hypercorn/trio echo ceiling: our protocol overhead", scenario_ceiling),
    Scenario("6", "big", "10 MB observation per step", scenario_big),
    Scenario("7", "idle", "memory per idle session", scenario_idle),
    Scenario("8", "validation", "frame validation cost", scenario_validation),
    Scenario("9", "scaling", "OpenEnv's scaling experiment (1 s blocking steps)", scenario_scaling),
)


def select(names: list[str] | None) -> list[Scenario]:
    """Scenarios by id or slug (all when ``names`` is empty); ValueError on an unknown name."""
    if not names:
        return list(SCENARIOS)
    by_name = {s.id: s for s in SCENARIOS} | {s.slug: s for s in SCENARIOS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = ", ".join(f"{s.id}/{s.slug}" for s in SCENARIOS)
        raise ValueError(f"unknown scenario {', '.join(unknown)} (known: {known})")
    return [s for s in SCENARIOS if s in {by_name[n] for n in names}]
