"""``python -m bench.handover``: what keeping sessions in a session store costs, and how fast a
restarted server is back (bench/README.md, "Sessions kept in a store").

1. Steps/s at 16 sessions side by side, the same environment (``bench.envs:TallyEnv``: a
   small snapshot) on four servers started together: no store, a SQLite store, ``--durable``
   SQLite, ``--durable`` Redis (a ``redis-server`` of the run's own; ``n/a`` without one).
   The variants run interleaved (A B C D A B C D ...) after one warm-up run each; each
   figure is the median over the runs; ratios are to no store. Beside steps/s, the server's
   CPU time per step (its threads included; Redis's own process not), which moves much
   less with the machine's load.
2. A restart with N kept sessions (default 1,000): a server with a SQLite store holds N
   sessions (each reset and stepped once), is stopped with SIGTERM (it writes them out and
   closes them with 1012), and a new process is started on the same port and store; once it
   listens one client steps (its resume taken from the store: the server is back to
   answering), then all the others at once. Reported: how long the old one took to hand
   over and exit; from the new process's start: listening, that first resumed step
   answered, all N answered; and the new server's CPU time to listen and for the resumes.

Figures on a shared 2-core machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from bench.procs import HOST, ServerProcess, _listening, free_port, raise_fd_limit, spawn, tree_cpu_seconds
from openenv_anyio.client import EnvClient
from openenv_anyio.client.reconnect import ReconnectPolicy

TARGET = "bench.envs:TallyEnv"
SESSIONS = 16
#: how long each run steps (full, --quick)
RUN_S, QUICK_RUN_S = 2.0, 0.5
RUNS, QUICK_RUNS = 5, 2
KEPT = 1000
#: sessions opened at once while filling the server that is restarted
OPEN_AT_ONCE = 50
#: the clients' resume policy: a restart takes a few seconds, more on a busy machine
RIDE_OUT = ReconnectPolicy(within_s=120, backoff_s=0.02, max_backoff_s=0.1)


@dataclass
class Variant:
    name: str
    args: list[str]
    server: ServerProcess | None = None
    skipped: str = ""


def _serve(name: str, args: list[str], port: int | None = None) -> ServerProcess:
    """``openenv-anyio serve TARGET`` as a process of its own (not yet listening)."""
    port = port or free_port()
    argv = ["-m", "openenv_anyio", "serve", TARGET, "--port", str(port), "--ping-interval", "0", *args]
    proc, stderr = spawn([*argv, "--log-level", "warning"])
    return ServerProcess(name, f"http://{HOST}:{port}", port, proc, stderr)


@contextlib.contextmanager
def _redis(workdir: Path) -> Iterator[str | None]:
    """A ``redis-server`` of this run's own, keeping nothing on disk; None without one."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", HOST, "--dir", str(workdir), "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not _listening(port):
            if time.monotonic() > deadline or process.poll() is not None:
                yield None
                return
            time.sleep(0.05)
        yield f"redis://{HOST}:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


# -- 1. steps/s ---------------------------------------------------------------------------------


async def _steps_per_s(server: ServerProcess, sessions: int, run_s: float) -> tuple[float, float]:
    """``sessions`` sessions reset, then all step for ``run_s``: steps/s over that time, and
    the server's CPU time per step (ms; its threads included, a Redis server not)."""
    url = server.url
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(EnvClient(url, ping_interval_s=None, message_timeout_s=60))
            for _ in range(sessions)
        ]
        for client in clients:
            await client.reset()
        steps = 0
        cpu = tree_cpu_seconds(server.pid)
        started = time.perf_counter()
        deadline = started + run_s

        async def drive(client: EnvClient) -> None:
            nonlocal steps
            while time.perf_counter() < deadline:
                await client.step({"add": 1})
                steps += 1

        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(drive, client)
        elapsed = time.perf_counter() - started
        return steps / elapsed, (tree_cpu_seconds(server.pid) - cpu) * 1000 / max(steps, 1)


async def throughput(
    variants: list[Variant], sessions: int, runs: int, run_s: float
) -> dict[str, list[tuple[float, float]]]:
    figures: dict[str, list[tuple[float, float]]] = {variant.name: [] for variant in variants if not variant.skipped}
    for round_ in range(runs + 1):  # the first round warms up
        for variant in variants:
            if variant.skipped:
                continue
            assert variant.server is not None
            measured = await _steps_per_s(variant.server, sessions, run_s)
            if round_:
                figures[variant.name].append(measured)
    return figures


# -- 2. a restart with many kept sessions ---------------------------------------------------------


async def restart(workdir: Path, kept: int) -> dict[str, float]:
    store = f"sqlite:///{workdir / 'restart.db'}"
    args = ["--session-store", store, "--max-concurrent-envs", str(kept + 16)]
    old = _serve("before", args)
    await anyio.to_thread.run_sync(old.wait_ready)
    new: ServerProcess | None = None
    limit = anyio.Semaphore(OPEN_AT_ONCE)
    opened, first, go, done = [0], anyio.Event(), anyio.Event(), anyio.Event()
    all_open = anyio.Event()
    answered: list[float] = []
    spawned = 0.0

    async def session(index: int) -> None:  # each client lives in its own task
        async with limit:
            client = EnvClient(old.url, ping_interval_s=None, reconnect=RIDE_OUT, message_timeout_s=120)
            await client.__aenter__()
        try:
            async with limit:
                await client.reset()
                await client.step({"add": 1})
            opened[0] += 1
            if opened[0] == kept:
                all_open.set()
            await (first if index == 0 else go).wait()
            result = await client.step({"add": 1})  # resumed on the new server
            assert result.observation["count"] == 2, result.observation
            answered.append(time.perf_counter() - spawned)
            if index == 0:
                go.set()
            await done.wait()
        finally:
            await client.__aexit__(None, None, None)

    try:
        async with anyio.create_task_group() as group:
            for index in range(kept):
                group.start_soon(session, index)
            await all_open.wait()
            stopping = time.perf_counter()
            old.proc.send_signal(signal.SIGTERM)
            status = await anyio.to_thread.run_sync(old.proc.wait)
            handed_over = time.perf_counter() - stopping
            if status != 0:
                raise RuntimeError(f"the first server exited with {status}: {old.stderr_tail()}")
            spawned = time.perf_counter()
            new = _serve("after", args, port=old.port)
            while not _listening(new.port):
                if new.proc.poll() is not None:
                    raise RuntimeError(f"the new server exited: {new.stderr_tail()}")
                await anyio.sleep(0.005)
            listening = time.perf_counter() - spawned
            cpu_listening = tree_cpu_seconds(new.pid)
            first.set()  # one client first (back to answering), then all the others at once
            while len(answered) < kept:
                await anyio.sleep(0.01)
            cpu_all = tree_cpu_seconds(new.pid)
            done.set()
    finally:
        old.stop()
        if new is not None:
            new.stop()
    return {
        "sessions": len(answered),
        "handed_over_and_exited_s": handed_over,
        "listening_s": listening,
        "first_answer_s": answered[0],
        "all_answered_s": max(answered),
        "server_cpu_to_listen_s": cpu_listening,
        "server_cpu_resumes_s": cpu_all - cpu_listening,
    }


# -- the command ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.handover", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs of {QUICK_RUN_S} s")
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="sessions stepping side by side")
    parser.add_argument("--kept", type=int, default=KEPT, help="sessions kept across the restart")
    parser.add_argument("--only", choices=["throughput", "restart"], default=None)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = parser.parse_args(argv)
    raise_fd_limit()
    runs, run_s = (QUICK_RUNS, QUICK_RUN_S) if args.quick else (RUNS, RUN_S)
    report: dict[str, Any] = {"sessions": args.sessions, "runs": runs, "run_s": run_s}
    with tempfile.TemporaryDirectory(prefix="bench-handover-") as tmp:
        workdir = Path(tmp)
        if args.only in (None, "throughput"):
            with _redis(workdir) as redis:
                variants = [
                    Variant("no store", []),
                    Variant("store (SQLite)", ["--session-store", f"sqlite:///{workdir / 'plain.db'}"]),
                    Variant(
                        "--durable SQLite", ["--session-store", f"sqlite:///{workdir / 'durable.db'}", "--durable"]
                    ),
                    Variant("--durable Redis", ["--session-store", redis or "", "--durable"]),
                ]
                if redis is None:
                    variants[-1].skipped = "no redis-server here"
                try:
                    for variant in variants:
                        if not variant.skipped:
                            variant.server = _serve(variant.name, variant.args)
                    for variant in variants:
                        if variant.server is not None:
                            variant.server.wait_ready()
                    figures = anyio.run(throughput, variants, args.sessions, runs, run_s, backend="trio")
                finally:
                    for variant in variants:
                        if variant.server is not None:
                            variant.server.stop()
            base = statistics.median(rate for rate, _ in figures["no store"])
            base_cpu = statistics.median(cpu for _, cpu in figures["no store"])
            print(f"steps/s at {args.sessions} sessions, median of {runs} interleaved runs of {run_s:g} s;")
            print("server CPU ms per step (median) and its ratio to no store")
            report["throughput"] = {}
            for variant in variants:
                if variant.skipped:
                    print(f"  {variant.name:<18} n/a ({variant.skipped})")
                    continue
                rates = [rate for rate, _ in figures[variant.name]]
                median = statistics.median(rates)
                cpu = statistics.median(cpu for _, cpu in figures[variant.name])
                report["throughput"][variant.name] = {
                    "steps_per_s": median,
                    "runs": rates,
                    "ratio": median / base,
                    "server_cpu_ms_per_step": cpu,
                    "cpu_ratio": cpu / base_cpu,
                }
                runs_text = ", ".join(f"{rate:,.0f}" for rate in rates)
                print(
                    f"  {variant.name:<18} {median:>9,.0f}   {median / base:.2f}x   "
                    f"cpu {cpu:.3f} ms {cpu / base_cpu:.2f}x   (runs: {runs_text})"
                )
        if args.only in (None, "restart"):
            figures_restart = anyio.run(restart, workdir, args.kept, backend="trio")
            report["restart"] = figures_restart
            print(f"restart with {figures_restart['sessions']:,.0f} kept sessions (SQLite store)")
            print(f"  old server: handed over and exited in {figures_restart['handed_over_and_exited_s']:.2f} s")
            print(f"  new server, from its process start: listening {figures_restart['listening_s']:.2f} s,")
            print(f"    first resumed step answered {figures_restart['first_answer_s']:.2f} s,")
            sessions, all_s = figures_restart["sessions"], figures_restart["all_answered_s"]
            print(f"    all {sessions:,.0f} answered {all_s:.2f} s (the rest at once)")
            print(
                f"  new server's CPU: {figures_restart['server_cpu_to_listen_s']:.2f} s to listen, "
                f"{figures_restart['server_cpu_resumes_s']:.2f} s for the resumes"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
