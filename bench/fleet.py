"""``python -m bench.fleet``: multi-process serving, measured side by side in one run.

1. Scenario 9 (N sessions at once x connect, reset, 3 steps that block 1 s) against two
   server processes on each side: ``openenv-anyio serve --workers 2`` and openenv-core's app
   on ``uvicorn --workers 2``; wall time and success, ratio ours / OpenEnv. Then ours alone
   at the largest N (``--ours-only``).
2. Steps/s at 64 sessions (sync echo env, a thread hop per call) with 2 workers vs 1, two
   client processes.
3. What a resume costs (connection cut, reconnect with the token, the request answered):
   against 1 worker (the resume always lands on the owner) and 2 workers (the kernel lands
   it on either; on the other one it is handed to the owner).

Figures on a shared 2-core machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.measure import Context, Profile
from bench.procs import running_server, wait_healthy
from bench.scenario_scaling import _scaling_run

THROUGHPUT_SESSIONS = 64
THROUGHPUT_STEPS = 200
RESUME_SESSIONS = 8
RESUME_ROUNDS = 25


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def scaling(ctx: Context, sessions: list[int], ours_only: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sessions:
        runs = {stack: _scaling_run(ctx, stack, n, workers=2) for stack in ("openenv", "ours")}
        row = {"n": n, **{stack: {"wall_s": m.metrics.get("wall_s"), "success_pct": m.metrics.get("success_pct"),
                                  "rss_peak_mb": m.metrics.get("rss_peak_mb"), "note": m.note or m.unavailable}
                          for stack, m in runs.items()}}
        ours, theirs = row["ours"]["wall_s"], row["openenv"]["wall_s"]
        row["ratio"] = ours / theirs if ours and theirs and row["openenv"]["success_pct"] == 100 else None
        rows.append(row)
        _log(f"[9 x2] {n}: {json.dumps(row)}")
    for n in ours_only:
        m = _scaling_run(ctx, "ours", n, workers=2)
        row = {"n": n, "ours": {"wall_s": m.metrics.get("wall_s"), "success_pct": m.metrics.get("success_pct"),
                                "rss_peak_mb": m.metrics.get("rss_peak_mb"), "note": m.note or m.unavailable}}
        rows.append(row)
        _log(f"[9 x2] {n}: {json.dumps(row)}")
    return rows


def throughput(ctx: Context) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for workers in (1, 2, 1, 2):  # interleaved, best of two each
        m = _scaling_run(ctx, "ours", THROUGHPUT_SESSIONS, workers=workers, kind="echo", steps=THROUGHPUT_STEPS, clients=2)
        rate = THROUGHPUT_SESSIONS * THROUGHPUT_STEPS / m.metrics["wall_s"] if m.metrics.get("success_pct") == 100 else math.nan
        key = f"workers_{workers}_steps_per_s"
        result[key] = max(result.get(key, 0.0), rate)
        _log(f"[64 sessions] workers {workers}: {rate:.0f} steps/s ({m.note or 'ok'})")
    result["ratio_2_vs_1"] = result["workers_2_steps_per_s"] / result["workers_1_steps_per_s"]
    return result


async def _resume_latencies(url: str) -> tuple[list[float], list[float]]:
    """Per request: a plain step's latency, and a step whose connection was cut just before."""
    from openenv_anyio.client import EnvClient

    plain: list[float] = []
    resumed: list[float] = []
    async with anyio.create_task_group():
        clients = [EnvClient(url, ping_interval_s=None) for _ in range(RESUME_SESSIONS)]
        for client in clients:
            await client.__aenter__()
        try:
            for env in clients:
                await env.reset()
            for _ in range(RESUME_ROUNDS):
                for env in clients:
                    started = time.perf_counter()
                    await env.step({"message": "x"})
                    plain.append(time.perf_counter() - started)
                    transport = env._transport  # bench only: cut the connection as a network would
                    assert transport is not None
                    await transport.abort()
                    started = time.perf_counter()
                    await env.step({"message": "y"})
                    resumed.append(time.perf_counter() - started)
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)
    return plain, resumed


def resume_cost() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for _ in range(2):  # interleaved
        for workers in (1, 2):
            with running_server(f"ours x{workers}", ["ours", "echo_inline", "--workers", str(workers)]) as server:
                wait_healthy(server, workers)
                time.sleep(1.0)
                plain, resumed = anyio.run(_resume_latencies, server.url)
            entry = result.setdefault(f"workers_{workers}", {"plain_ms": [], "resume_ms": []})
            entry["plain_ms"] += [s * 1000 for s in plain]
            entry["resume_ms"] += [s * 1000 for s in resumed]
    summary: dict[str, Any] = {}
    for key, entry in result.items():
        summary[key] = {
            "plain_median_ms": statistics.median(entry["plain_ms"]),
            "resume_median_ms": statistics.median(entry["resume_ms"]),
            "resume_mean_ms": statistics.fmean(entry["resume_ms"]),
            "resumes": len(entry["resume_ms"]),
        }
    one, two = summary["workers_1"]["resume_mean_ms"], summary["workers_2"]["resume_mean_ms"]
    # with 2 idle workers about half the resumes land on the owner: the rest pay the hand-off
    summary["non_owner_estimate_ms"] = one + 2 * (two - one)
    _log(f"[resume] {json.dumps(summary)}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="*", default=[2048, 4096], help="scenario 9 sizes for both stacks")
    parser.add_argument("--ours-only", type=int, nargs="*", default=[8192], help="scenario 9 sizes for ours alone")
    parser.add_argument("--only", nargs="+", choices=["scaling", "throughput", "resume"], default=["scaling", "throughput", "resume"])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    ctx = Context(Profile.make(False), pool=None)  # type: ignore[arg-type]  # _scaling_run needs no pool
    figures: dict[str, Any] = {}
    if "resume" in args.only:
        figures["resume"] = resume_cost()
    if "throughput" in args.only:
        figures["throughput"] = throughput(ctx)
    if "scaling" in args.only:
        figures["scaling"] = scaling(ctx, args.sessions, args.ours_only)
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
