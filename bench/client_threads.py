"""Blocking clients driven from many threads: ``python -m bench.client_threads``.

A trainer that runs env calls from a thread pool (up to 128 threads) uses the blocking
client. One server (ours, env ``echo_inline``) serves every variant; each run of a variant
is a fresh child process in which ``--threads`` threads step at once, after a barrier:

- ``per-thread``: each thread opens its own client (its own session) and steps it;
- ``shared``: one client (one session) opened once, every thread steps it.

Clients: ``upstream`` (OpenEnv 0.10's ``GenericEnvClient`` called without ``await``, run by
the peer venv's Python), ``compat`` (``openenv_anyio.compat.GenericEnvClient`` the same
way), ``native`` (``EnvClient(url).sync()``). Reported per run: steps/s over the stepping
phase, step p50/p99, client CPU per step, and the OS threads of the child process while it
stepped (the count says how many event-loop threads the stepping threads share). Runs
interleaved, medians. ``--variant NAME=PATH`` also runs our clients from another checkout
(``compat@NAME``, ``native@NAME``: ``PATH`` first on the child's path), for before/after
comparisons in one run. Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.compat_clients import ACTION, ROOT, UPSTREAM_PYTHON, child_environment
from bench.procs import proc_status
from bench.report import save_figures
from bench.sessions import percentile

CLIENTS = ("upstream", "compat", "native")
MODES = ("per-thread", "shared")


def _open(kind: str, url: str) -> Any:
    """A connected blocking client of ``kind`` with its session reset."""
    if kind == "upstream":
        from openenv.core.generic_client import GenericEnvClient as Upstream

        env: Any = Upstream(base_url=url)
    elif kind == "compat":
        from openenv_anyio.compat import GenericEnvClient as Compat

        env = Compat(base_url=url)
    else:
        from openenv_anyio.client import EnvClient

        env = EnvClient(url).sync()
    env.reset()
    return env


def measure(kind: str, mode: str, url: str, threads: int, steps: int) -> dict[str, Any]:
    """Run in the child: ``threads`` threads x ``steps`` steps, clients as ``mode`` says."""
    shared = _open(kind, url) if mode == "shared" else None
    latencies: list[list[float]] = [[] for _ in range(threads)]
    errors: list[str] = []
    start = threading.Barrier(threads + 1)
    done = threading.Barrier(threads + 1)

    def drive(index: int) -> None:
        env = shared
        try:
            if env is None:
                env = _open(kind, url)
        except Exception as exc:  # counted; the thread still meets both barriers
            errors.append(f"open: {type(exc).__name__}: {exc}"[:160])
        start.wait()
        try:
            for _ in range(steps if env is not None else 0):
                started = time.perf_counter()
                env.step(ACTION)  # type: ignore[union-attr]
                latencies[index].append(time.perf_counter() - started)
        except Exception as exc:
            errors.append(f"step: {type(exc).__name__}: {exc}"[:160])
        done.wait()
        if env is not None and shared is None:
            env.close()

    workers = [threading.Thread(target=drive, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    os_threads = proc_status_threads()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    done.wait()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    for worker in workers:
        worker.join(timeout=30)
    if shared is not None:
        shared.close()
    flat = [value for values in latencies for value in values]
    return {
        "steps": len(flat),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "steps_per_s": len(flat) / wall if wall > 0 else 0.0,
        "p50_ms": percentile(flat, 50) * 1000,
        "p99_ms": percentile(flat, 99) * 1000,
        "cpu_us_per_step": cpu / max(1, len(flat)) * 1e6,
        "os_threads": os_threads,
    }


def proc_status_threads() -> int:
    """This process's OS threads now (``/proc/self/status``)."""
    import os

    return proc_status(os.getpid()).get("Threads", 0)


def _run_child(
    kind: str, mode: str, url: str, threads: int, steps: int, trees: dict[str, str] | None = None
) -> dict[str, Any]:
    """One run in a fresh child; ``kind`` may name a checkout of ``trees`` (``compat@before``)."""
    kind, _, tree = kind.partition("@")
    python = str(UPSTREAM_PYTHON) if kind == "upstream" else sys.executable
    argv = [python, "-P", "-m", "bench.client_threads", "--child", kind, mode, url]
    argv += ["--threads", str(threads), "--steps", str(steps)]
    env = child_environment()
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([(trees or {})[tree], env["PYTHONPATH"]])
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {mode} failed: {out.stderr.strip().splitlines()[-3:]}")
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_threads", description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this running server instead of starting ours (echo_inline)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 128])
    parser.add_argument("--steps", type=int, default=100, help="steps per thread")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--variant", action="append", default=[], help="NAME=PATH: our clients from that checkout too")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", nargs=3, metavar=("CLIENT", "MODE", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(*args.child, args.threads[0], args.steps)))
        return 0
    if "upstream" in args.clients and not UPSTREAM_PYTHON.exists():
        print(f"error: {UPSTREAM_PYTHON} is missing: run tools/install-test-deps.sh", file=sys.stderr)
        return 2
    server = None
    url = args.url
    if url is None:
        from bench.stacks import ours

        server = ours.start_server("echo_inline", max_concurrent_envs=max(args.threads) * 2)
        url = server.url
    trees = dict(text.split("=", 1) for text in args.variant)
    kinds = [*args.clients, *(f"{k}@{tree}" for tree in trees for k in args.clients if k != "upstream")]
    variants = [(threads, mode, kind) for threads in args.threads for mode in args.modes for kind in kinds]
    variants = [v for v in variants if not (v[0] == 1 and v[1] == "shared")]  # one thread: shared is per-thread
    runs: dict[tuple[int, str, str], list[dict[str, Any]]] = {v: [] for v in variants}
    try:
        for run in range(args.runs):
            for threads, mode, kind in variants:
                runs[(threads, mode, kind)].append(_run_child(kind, mode, url, threads, args.steps, trees))
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    rows = []
    print(f"server: ours echo_inline ({url}); {args.steps} steps per thread, {args.runs} runs interleaved, medians")
    print(
        f"{'threads':>7} {'mode':<11}{'client':<16}{'steps/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'CPU us/step':>12}"
        f"{'OS threads':>11}{'errors':>7}"
    )
    for threads, mode, kind in variants:
        found = runs[(threads, mode, kind)]
        clean = [r for r in found if not r["errors"]] or found
        row = {"threads": threads, "mode": mode, "client": kind, "runs": len(found)}
        for key in ("steps_per_s", "p50_ms", "p99_ms", "cpu_us_per_step", "os_threads"):
            row[key] = statistics.median(r[key] for r in clean)
        row["errors"] = sum(r["errors"] for r in found)
        row["first_error"] = next((r["first_error"] for r in found if r["first_error"]), "")
        rows.append(row)
        print(
            f"{threads:>7} {mode:<11}{kind:<16}{row['steps_per_s']:>9.0f}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}"
            f"{row['cpu_us_per_step']:>12.1f}{row['os_threads']:>11.0f}{row['errors']:>7}"
            + (f"  {row['first_error']}" if row["first_error"] else "")
        )
    save_figures(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
