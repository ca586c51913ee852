"""Scenarios 1-6: steps/s and latency, ours vs OpenEnv (and the crossed pairs)."""

from __future__ import annotations

import math

from bench.envs import BIG_OBSERVATION_BYTES
from bench.measure import Context, Variant, measure_throughput, pairs
from bench.results import Row


def scenario_sync(ctx: Context) -> list[Row]:
    """1. A sync env run the default way: every call hops to a thread on both sides."""
    return [
        measure_throughput(
            ctx, "1", f"sync env, thread hop, {n} sessions", pairs("echo", "echo"), n, baseline="openenv"
        )
        for n in ctx.profile.session_counts
    ]


def scenario_inline(ctx: Context) -> list[Row]:
    """2. The same fast sync env declared NON_BLOCKING (inline on our loop) vs OpenEnv's hop."""
    return [
        measure_throughput(
            ctx,
            "2",
            f"non-blocking inline vs their hop, {n} sessions",
            pairs("echo_inline", "echo", crossed=ctx.profile.crossed),
            n,
            baseline="openenv",
        )
        for n in ctx.profile.session_counts[:2]
    ]


def scenario_async(ctx: Context) -> list[Row]:
    """3. An env with async methods: both servers await it on their event loop."""
    return [
        measure_throughput(
            ctx,
            "3",
            f"async env, {n} sessions",
            pairs("echo_async", "echo_async", crossed=ctx.profile.crossed),
            n,
            baseline="openenv",
        )
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
        row = measure_throughput(
            ctx, "5", f"server ceiling, raw client, {n} sessions", variants, n, baseline="echo-hypercorn", note=note
        )
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
            ctx,
            "6",
            "10 MB observation, 1 session",
            pairs("big", "big"),
            1,
            baseline="openenv",
            steps=ctx.profile.big_steps,
            duration_s=None,
            extra=mb_per_s,
        )
    ]


def scenario_adapter(ctx: Context) -> list[Row]:
    """10. The same echo logic served by our server written in our env API and as an
    openenv-core ``Environment`` through our adapter (and by OpenEnv itself), same client;
    plus that very environment and its models written in our env API (``own-api+models``),
    which does the adapted path's pydantic work without the adapter."""
    variants = [
        Variant("own-api", "ours", "ours", "echo"),
        Variant("own-api+models", "ours", "ours", "echo_models"),
        Variant("adapter", "ours", "ours", "echo_adapted"),
        Variant("openenv", "ours", "openenv", "echo"),
    ]
    note = "our client (asyncio) on all four; adapter cost = 1 - adapter/own-api"
    rows = []
    for n in ctx.profile.session_counts[:2]:
        row = measure_throughput(
            ctx, "10", f"adapter vs own env API, {n} sessions", variants, n, baseline="own-api", note=note
        )
        ratio, models = row.ratio("adapter"), row.ratio("own-api+models")
        if not math.isnan(ratio):
            row.note += f"; adapter cost {100 * (1 - ratio):.1f} %"
            if not math.isnan(models) and models > 0:
                row.note += f"; adapter / own-api+models {ratio / models:.2f}x"
        rows.append(row)
    return rows


def scenario_isolate(ctx: Context) -> list[Row]:
    """12. The cost of process isolation: the same env, the same client (ours, asyncio), the
    server running each session's environment on a thread (or inline) vs in a process of
    its own (``--isolate process``)."""
    rows = []
    for thread_kind, process_kind, what in (
        ("echo", "echo_isolated", "sync env"),
        ("echo_inline", "echo_inline_isolated", "non-blocking env"),
    ):
        variants = [Variant("thread", "ours", "ours", thread_kind), Variant("process", "ours", "ours", process_kind)]
        for n in ctx.profile.session_counts[:2]:
            row = measure_throughput(
                ctx,
                "12",
                f"isolate process vs thread, {what}, {n} sessions",
                variants,
                n,
                baseline="thread",
                note="our client (asyncio); process / thread steps/s",
            )
            ratio = row.ratio("process")
            if not math.isnan(ratio) and ratio > 0:
                row.note += f"; a step costs {1 / ratio:.2f}x the thread's"
            rows.append(row)
    return rows
