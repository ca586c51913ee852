"""Client CPU per session, many at once in one process: ``python -m bench.client_sessions``.

A trainer that opens thousands of sessions from one process pays for each session's
connect, reset, steps and close, and for the garbage collector walking all of them: a
full (oldest-generation) collection visits every live object, and each open session holds
about 150 of them on the client side. One server (``bench.serve ours``, ``--env``, the inline
echo by default) runs in its own process; each run is a child process that opens
``--sessions`` sessions at once with our client (``bench.sessions.run_phased_burst``: they
pass connect, reset, ``--steps`` steps and close together) and reports its CPU time per
session in each phase. Variants, interleaved ``--runs`` times, medians printed:

- ``default``: Python's collection thresholds;
- ``rare-full-gc``: the oldest generation's threshold raised to :data:`RARE_FULL_GC`;
- ``rarer-gc``: that, and the young generation's raised to :data:`RARER_YOUNG_GC`, the
  recipe docs/client.md gives (what ``ServerConfig.full_gc_threshold`` and
  ``young_gc_threshold`` do for a server).

Figures are reported, never asserted (bench/README.md, "Client CPU per session").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.procs import REPO_ROOT, raise_fd_limit, raise_gc_thresholds
from bench.sessions import PHASES

#: the oldest generation's threshold of the ``rare-full-gc`` and ``rarer-gc`` variants
RARE_FULL_GC = 100
#: the young generation's threshold of the ``rarer-gc`` variant
RARER_YOUNG_GC = 10_000
#: each variant's thresholds (``raise_gc_thresholds``'s arguments)
THRESHOLDS: dict[str, dict[str, int]] = {
    "default": {},
    "rare-full-gc": {"oldest": RARE_FULL_GC},
    "rarer-gc": {"young": RARER_YOUNG_GC, "oldest": RARE_FULL_GC},
}
VARIANTS = tuple(THRESHOLDS)


def measure_once(url: str, sessions: int, steps: int, backend: str) -> dict[str, Any]:
    """In the child: one phased burst of ``sessions``; CPU ms per session by phase (and the
    young and oldest generations' thresholds it ran with)."""
    import anyio

    from bench.sessions import run_phased_burst
    from bench.stacks.ours import check_client, open_session

    check_client()  # imports the client: not part of any session's cost
    cpu_at = {"start": time.process_time()}

    async def at_gate(phase: str) -> None:
        cpu_at[phase] = time.process_time()

    records = anyio.run(
        lambda: run_phased_burst(
            open_session,
            url,
            [f"c{i}" for i in range(sessions)],
            steps,
            start_at=time.time(),
            cap_s=300.0,
            between=at_gate,
        ),
        backend=backend,
    )
    failed = [r for r in records if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} of {sessions} sessions failed, first: {failed[0].error}")
    marks = ("start", *PHASES)
    cpu_ms = {phase: (cpu_at[phase] - cpu_at[before]) * 1000 / sessions for before, phase in zip(marks, PHASES)}
    young, _, oldest = gc.get_threshold()
    return cpu_ms | {"total": sum(cpu_ms.values()), "young_threshold": young, "oldest_threshold": oldest}


def _run_child(variant: str, url: str, sessions: int, steps: int, backend: str) -> dict[str, float]:
    argv = [sys.executable, "-m", "bench.client_sessions", "--child", variant, url]
    argv += ["--sessions", str(sessions), "--steps", str(steps), "--backend", backend]
    environ = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run(argv, env=environ, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{variant} failed: {out.stderr.strip().splitlines()[-1:]}")
    found: dict[str, float] = json.loads(out.stdout)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_sessions", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1024, 4096], help="sessions at once per run")
    parser.add_argument("--steps", type=int, default=3, help="steps per session")
    parser.add_argument("--env", default="echo_inline", help="env kind of bench.envs the server runs")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant and size, interleaved")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if min(args.sessions) < 1 or args.steps < 0 or args.runs < 1:
        parser.error("--sessions and --runs must be at least 1, --steps at least 0")
    if args.child:
        variant, url = args.child
        raise_fd_limit()
        raise_gc_thresholds(**THRESHOLDS[variant])
        print(json.dumps(measure_once(url, args.sessions[0], args.steps, args.backend)))
        return 0
    from bench.stacks import ours

    server = ours.start_server(args.env, max_concurrent_envs=max(args.sessions))
    results: dict[tuple[int, str], list[dict[str, float]]] = {}
    try:
        for run in range(args.runs):
            for n in args.sessions:
                for variant in VARIANTS:
                    results.setdefault((n, variant), []).append(
                        _run_child(variant, server.url, n, args.steps, args.backend)
                    )
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    finally:
        server.stop()
    print(
        f"our client ({args.backend}) against our server ({args.env}): client CPU ms per session, "
        f"medians of {args.runs} runs (range of the total); ratio vs default"
    )
    print(f"{'sessions':>8}  {'variant':<13}" + "".join(f"{p:>9}" for p in (*PHASES, "total")) + "  range        ratio")
    for n in args.sessions:
        base = statistics.median(r["total"] for r in results[(n, VARIANTS[0])])
        for variant in VARIANTS:
            runs = results[(n, variant)]
            medians = [statistics.median(r[key] for r in runs) for key in (*PHASES, "total")]
            spread = f"{min(r['total'] for r in runs):.3f}-{max(r['total'] for r in runs):.3f}"
            print(
                f"{n:>8}  {variant:<13}"
                + "".join(f"{m:>9.3f}" for m in medians)
                + f"  {spread:<12} {medians[-1] / base:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
