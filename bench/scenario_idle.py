"""Scenario 7: server memory per idle session."""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import anyio

from bench import sessions
from bench.measure import Context
from bench.pool import start_server
from bench.procs import ServerProcess
from bench.results import Measurement, Row, median_metrics
from bench.stacks import StackUnavailable
from bench.stacks.registry import client_stack


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
    ctx.log(
        "  [7] idle: "
        + ", ".join(f"{m.variant} {m.metrics.get('kb_per_session', math.nan):.0f} kB" for m in row.measurements if m.ok)
    )
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
