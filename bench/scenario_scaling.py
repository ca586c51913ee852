"""Scenario 9: OpenEnv's scaling experiment (N sessions at once, 1 s blocking steps)."""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import sessions
from bench.measure import Context
from bench.pool import start_server
from bench.procs import START_TIMEOUT_S, kill_group, spawn, tree_cpu_seconds, tree_status, wait_healthy
from bench.procs import start_server as start_process
from bench.results import Measurement, Row
from bench.stacks import StackUnavailable
from bench.stacks.registry import client_stack

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
                f"{m.variant} wall {m.metrics.get('wall_s', math.nan):.1f} s "
                f"ok {m.metrics.get('success_pct', math.nan):.0f} %"
                for m in row.measurements
                if m.ok
            )
        )
    return rows


def _scaling_run(
    ctx: Context,
    stack: str,
    n: int,
    *,
    workers: int = 1,
    kind: str = "sleep",
    steps: int = SCALING_STEPS,
    clients: int | None = None,
    connect_timeout_s: float | None = None,
) -> Measurement:
    """One burst of ``n`` sessions of ``stack``'s client against a fresh ``stack`` server
    (``workers`` server processes: ours ``--workers``, OpenEnv uvicorn's ``workers``);
    ``connect_timeout_s``: our client's bound on connect + handshake (default: its own)."""
    m = Measurement(stack if workers == 1 else f"{stack} x{workers}")
    try:
        client_stack(stack)
        if workers == 1:
            server = start_server(stack, kind, wait=False)
        else:
            server = start_process(f"{stack}[{kind}] x{workers}", [stack, kind, "--workers", str(workers)], wait=False)
    except StackUnavailable as exc:
        m.unavailable = str(exc)
        return m
    cap = ctx.profile.scaling_cap_s
    loaders = clients or max(1, math.ceil(n / SESSIONS_PER_WORKER))
    shares = [n // loaders + (1 if i < n % loaders else 0) for i in range(loaders)]
    procs = []
    peak_rss_kb = peak_threads = 0
    server_cpu_s = math.nan
    client_cpu_s = 0.0
    outcomes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        folder = Path(tmp)
        try:
            for i, share in enumerate(shares):  # workers import their client while the server starts
                argv = [
                    "-m",
                    "bench.loadgen",
                    stack,
                    server.url,
                    "--sessions",
                    str(share),
                    "--steps",
                    str(steps),
                    "--dir",
                    tmp,
                    "--cap",
                    repr(cap),
                    "--out",
                    str(folder / f"out-{i}.json"),
                ]
                if connect_timeout_s is not None:
                    argv += ["--connect-timeout", repr(connect_timeout_s)]
                procs.append(spawn(argv)[0])
            server.wait_ready(
                timeout_s=START_TIMEOUT_S if workers == 1 else 180.0
            )  # uvicorn's workers listen once imported
            wait_healthy(server, workers)
            _wait_for_files(folder, "ready-", procs, timeout_s=60.0)
            start_at = time.time() + 0.2
            (folder / "go.tmp").write_text(repr(start_at))
            (folder / "go.tmp").rename(folder / "go")
            hard_deadline = start_at + cap + 15.0
            cpu_at_start = tree_cpu_seconds(server.pid)
            while any(p.poll() is None for p in procs) and time.time() < hard_deadline:
                status = tree_status(server.pid)
                peak_rss_kb = max(peak_rss_kb, status.get("VmRSS", 0))
                peak_threads = max(peak_threads, status.get("Threads", 0))
                time.sleep(0.2)
            server_cpu_s = tree_cpu_seconds(server.pid) - cpu_at_start
            for path in sorted(folder.glob("out-*.json")):
                written = json.loads(path.read_text())
                outcomes += written["sessions"]
                client_cpu_s += written["cpu_s"]
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
        "server_cpu_s": server_cpu_s,  # every server process, from the start to the last session's end
        "client_cpu_s": client_cpu_s,  # every load process, its burst only (its imports excluded)
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
