"""``python -m bench.scale``: scale figures, with the cost of each session on the server.

Two measurements, each a burst of N sessions arriving at once (scenario 9's load
processes, ``bench.loadgen --phased``), one fresh server per burst:

- ``burst``: each session connects, resets and takes ``--steps`` steps of ``--env`` (the
  1 s ``sleep`` env by default), then closes. Per run: success rate and the failures counted
  by cause (``sessions.failure_cause``), connect p50/p99 (from the common start), step
  p50/p99/p99.9, the server's CPU per session in each phase, its RSS per session at the
  peak and per idle session (all sessions open and reset, before their steps), and the
  steps each session got counted on the env side (``bench.envs`` step ledger).
- ``hostile``: bad clients beside well-behaved ones (:mod:`bench.hostile_clients`).
- ``zero-sleep``: the same with the zero-work echo env, inline (``echo_inline``) and behind
  the thread hop (``echo``): steps/s over the stepping phase, steps per second of server CPU
  (steps per core), step p50/p99. ``--repeats R`` runs every size and env R times,
  interleaved, and ends with their medians, ranges and the load average around the runs.

The sessions pass each phase (connect, reset, steps, close) together: when the last one is
through, the harness reads the server's CPU time and RSS, then lets them all go on. The load
processes share the machine's cores with the server. Variants: ``ours``, ``ours-x2``
(``--workers 2``), ``ours-x2-switch`` (the same with ``--switch-interval 0.05``),
``upstream`` (OpenEnv 0.10's server and client, run by the peer venv's Python). Figures are
reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import hostile_clients
from bench.compat_clients import UPSTREAM_PYTHON
from bench.envs import STEP_LEDGER_ENV
from bench.fleet import preflight
from bench.procs import (
    START_TIMEOUT_S,
    ServerProcess,
    kill_group,
    spawn,
    start_server,
    tree_cpu_seconds,
    tree_status,
    wait_healthy,
)
from bench.report import save_figures
from bench.scenario_scaling import SESSIONS_PER_WORKER, _wait_for_files
from bench.sessions import PHASES, percentile

BURST_SESSIONS = (1024, 2048, 4096, 8192, 16384)
ZERO_SLEEP_SESSIONS = (1, 16, 256, 4096)
#: steps per zero-sleep run, over all sessions (at least 3 per session)
ZERO_SLEEP_TOTAL_STEPS = 20_000
#: the kernel's counters of connections it refused or dropped at a listening socket
#: (``/proc/net/netstat``, ``TcpExt``): read around each burst
KERNEL_COUNTERS = ("ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "SyncookiesSent", "TCPBacklogDrop")
#: how long the env side may take, after the last close, to record its sessions' steps
LEDGER_WAIT_S = 15.0


@dataclass(frozen=True)
class Variant:
    """A server (``bench.serve`` arguments), the client stack that loads it, their Python."""

    name: str
    serve: tuple[str, ...]
    client: str
    workers: int = 1
    python: str | None = None  # None: this interpreter


VARIANTS = {
    "ours": Variant("ours", ("ours",), "ours"),
    "ours-x2": Variant("ours-x2", ("ours", "--workers", "2"), "ours", workers=2),
    "ours-x2-switch": Variant(
        "ours-x2-switch", ("ours", "--workers", "2", "--switch-interval", "0.05"), "ours", workers=2
    ),
    "upstream": Variant("upstream", ("openenv",), "openenv", python=str(UPSTREAM_PYTHON)),
}


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ms(values: list[float], q: float) -> float | None:
    found = percentile(values, q)
    return None if math.isnan(found) else round(found * 1000, 2)


def kernel_counters() -> dict[str, int]:
    """``KERNEL_COUNTERS`` now (the network namespace's, all processes in it; empty if unreadable)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:]))
            return {name: int(table[name]) for name in KERNEL_COUNTERS if name in table}
    return {}


class _Run:
    """The server process of one burst and what the harness read of it at each gate."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.cpu: dict[str, float] = {}
        self.at: dict[str, float] = {}
        self.rss_kb: dict[str, int] = {}
        self.peak_rss_kb = 0
        self.peak_threads = 0
        self.kernel: dict[str, dict[str, int]] = {}

    def sample(self) -> dict[str, int]:
        status = tree_status(self.server.pid)
        self.peak_rss_kb = max(self.peak_rss_kb, status.get("VmRSS", 0))
        self.peak_threads = max(self.peak_threads, status.get("Threads", 0))
        return status

    def mark(self, name: str) -> None:
        self.cpu[name] = tree_cpu_seconds(self.server.pid)
        self.kernel[name] = kernel_counters()
        self.at[name] = time.time()
        self.rss_kb[name] = self.sample().get("VmRSS", 0)


def burst(
    variant: Variant,
    n: int,
    *,
    kind: str = "sleep",
    steps: int = 3,
    cap_s: float = 120.0,
    connect_timeout_s: float | None = None,
    loaders: int | None = None,
    gated: bool = True,
    rounds: int = 1,
) -> list[dict[str, Any]]:
    """Phased bursts of ``n`` sessions against a fresh server of ``variant``, ``rounds`` of
    them one after another on the same server (each round's load processes start once the
    round before has closed its sessions): the figures of each round (``summarise``,
    numbered ``round``), or, from the round that could not run on, ``{"unavailable": why}``
    when the server or the load never started.
    ``gated=False``: the sessions run straight through (the wall time of a free burst, as
    scenario 9 has it); the CPU and RSS by phase are then not reported."""
    if variant.python is not None and not Path(variant.python).exists():
        return [{"variant": variant.name, "sessions": n, "unavailable": f"{variant.python} is missing"}]
    count = loaders or max(1, math.ceil(n / SESSIONS_PER_WORKER))
    shares = [n // count + (1 if i < n % count else 0) for i in range(count)]
    found: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        ledger = Path(tmp) / "ledger"
        ledger.mkdir()
        server = start_server(
            f"{variant.name}[{kind}]",
            [*variant.serve[:1], kind, *variant.serve[1:], "--max-concurrent-envs", str(max(n, 1))],
            wait=False,
            python=variant.python,
            environ={STEP_LEDGER_ENV: str(ledger)},
        )
        try:
            for number in range(1, rounds + 1):
                folder = Path(tmp) / f"round-{number}"
                folder.mkdir()
                try:
                    run, outputs = _round(
                        variant, server, shares, folder, number, steps, cap_s, connect_timeout_s, gated
                    )
                    counted = _read_ledger(ledger, {s["episode"] for o in outputs for s in o["sessions"] if s["ok"]})
                except (RuntimeError, TimeoutError, OSError) as exc:
                    found.append({"variant": variant.name, "sessions": n, "unavailable": str(exc)[:300]})
                    break
                figures = summarise(variant, n, kind, steps, run, outputs, counted, gated=gated)
                found.append(figures | ({"round": number} if rounds > 1 else {}))
                if server.proc.poll() is not None:
                    break
        finally:
            alive = server.proc.poll() is None
            tail = server.stderr_tail(5)
            server.stop()
    if not alive and "unavailable" not in found[-1]:
        found[-1]["server_died"] = tail
    return found


def _round(
    variant: Variant,
    server: ServerProcess,
    shares: list[int],
    folder: Path,
    number: int,
    steps: int,
    cap_s: float,
    connect_timeout_s: float | None,
    gated: bool,
) -> tuple[_Run, list[dict[str, Any]]]:
    """One burst on ``server`` (waited for before the first): its gate readings and the load
    processes' outputs. Episode ids name the round, so the env side's ledger tells rounds apart."""
    run = _Run(server)
    procs = []
    try:
        for i, share in enumerate(shares):
            argv = ["-m", "bench.loadgen", variant.client, server.url, "--sessions", str(share)]
            argv += ["--steps", str(steps), "--dir", str(folder), "--cap", repr(cap_s), "--phased", f"r{number}s{i}"]
            argv += ["--out", str(folder / f"out-{i}.json")] + ([] if gated else ["--free"])
            if connect_timeout_s is not None:
                argv += ["--connect-timeout", repr(connect_timeout_s)]
            procs.append(spawn(argv, python=variant.python)[0])
        if number == 1:
            server.wait_ready(timeout_s=START_TIMEOUT_S if variant.workers == 1 else 180.0)
            wait_healthy(server, variant.workers)
        _wait_for_files(folder, "ready-", procs, timeout_s=120.0)
        time.sleep(1.0)  # the server settles after the health checks
        run.mark("start")
        start_at = time.time() + 0.2
        (folder / "go.tmp").write_text(repr(start_at))
        (folder / "go.tmp").rename(folder / "go")
        deadline = start_at + cap_s + 30.0
        for phase in PHASES:
            while len(list(folder.glob(f"at-{phase}-*"))) < len(procs):
                if time.time() > deadline or all(p.poll() is not None for p in procs):
                    raise TimeoutError(f"the load processes never all finished phase {phase}")
                run.sample()
                time.sleep(0.02)
            run.mark(phase)
            (folder / f"go-{phase}").touch()
        for proc in procs:
            proc.wait(timeout=60.0)
        return run, [json.loads(path.read_text()) for path in sorted(folder.glob("out-*.json"))]
    finally:
        for proc in procs:
            kill_group(proc, grace_s=2.0)


def _read_ledger(folder: Path, expected: set[str]) -> dict[str, tuple[int, int]]:
    """The env side's count per episode id: (resets, steps), once every episode of
    ``expected`` has been recorded or ``LEDGER_WAIT_S`` has passed (the server closes envs
    after their sessions)."""
    deadline = time.monotonic() + LEDGER_WAIT_S
    while True:
        found: dict[str, tuple[int, int]] = {}
        duplicates = 0
        for path in folder.glob("steps-*.txt"):
            for line in path.read_text().splitlines():
                episode, resets, steps = line.split()
                if episode == "None":
                    continue  # an env closed without a reset
                duplicates += episode in found
                found[episode] = (int(resets), int(steps))
        if expected <= found.keys() or time.monotonic() > deadline:
            if duplicates:
                found["<closed more than once>"] = (duplicates, 0)
            return found
        time.sleep(0.2)


def summarise(
    variant: Variant,
    n: int,
    kind: str,
    steps: int,
    run: _Run,
    outputs: list[dict[str, Any]],
    counted: dict[str, tuple[int, int]],
    *,
    gated: bool = True,
) -> dict[str, Any]:
    """The figures of one burst (see the module docstring); of a free one (not ``gated``),
    none that need the phases apart: CPU only in all, no idle RSS, no stepping rate."""
    records = [record for output in outputs for record in output["sessions"]]
    ok = [r for r in records if r["ok"]]
    step_s = [s for r in records for s in r["step_s"]]
    causes = Counter(r["cause"] for r in records if not r["ok"])
    if len(records) < n:
        causes["never reported (load process stopped)"] += n - len(records)
    cpu_ms = {
        phase: round((run.cpu[phase] - run.cpu[before]) * 1000 / n, 3)
        for before, phase in zip(("start", *PHASES), PHASES)
    }
    cpu_ms["total"] = round((run.cpu["close"] - run.cpu["start"]) * 1000 / n, 3)
    wall_s = {phase: round(run.at[phase] - run.at[before], 3) for before, phase in zip(("start", *PHASES), PHASES)}
    stepping_s = run.at["steps"] - run.at["reset"]
    stepping_cpu_s = run.cpu["steps"] - run.cpu["reset"]
    exact = sum(1 for r in ok if counted.get(r["episode"]) == (1, steps))
    wrong = [
        {"episode": r["episode"], "env_counted": counted[r["episode"]]}
        for r in ok
        if r["episode"] in counted and counted[r["episode"]] != (1, steps)
    ]
    if not gated:
        cpu_ms = dict.fromkeys(PHASES, None) | {"total": cpu_ms["total"]}
        stepping_s = stepping_cpu_s = 0.0
    return {
        "variant": variant.name,
        "gated": gated,
        "env": kind,
        "sessions": n,
        "steps_per_session": steps,
        "success_pct": round(100.0 * len(ok) / n, 2),
        "failures": dict(causes.most_common()),
        "first_error": next((r["error"] for r in records if not r["ok"]), ""),
        "connect_ms": {"p50": _ms([r["connect_s"] for r in records if r["connect_s"] is not None], 50)}
        | {"p99": _ms([r["connect_s"] for r in records if r["connect_s"] is not None], 99)},
        "step_ms": {"p50": _ms(step_s, 50), "p99": _ms(step_s, 99), "p99.9": _ms(step_s, 99.9)},
        "phase_wall_s": wall_s,
        "wall_s": round(run.at["close"] - run.at["start"], 3),
        "server_cpu_ms_per_session": cpu_ms,
        "client_cpu_ms_per_session": round(sum(o["cpu_s"] for o in outputs) * 1000 / n, 3),
        "server_rss_mb": {
            "before": round(run.rss_kb["start"] / 1024, 1),
            "idle_sessions": round(run.rss_kb["reset"] / 1024, 1),
            "peak": round(run.peak_rss_kb / 1024, 1),
        },
        "server_rss_kb_per_session": round((run.peak_rss_kb - run.rss_kb["start"]) / n, 1),
        "server_rss_kb_per_idle_session": round((run.rss_kb["reset"] - run.rss_kb["start"]) / max(1, len(ok)), 1)
        if gated
        else None,
        "server_threads_peak": run.peak_threads,
        "steps_per_s": round(len(step_s) / stepping_s, 1) if stepping_s > 0 else None,
        "steps_per_server_cpu_s": round(len(step_s) / stepping_cpu_s, 1) if stepping_cpu_s > 0 else None,
        "env_side": {
            "sessions_ok": len(ok),
            "exact_steps": exact,
            "wrong_steps": wrong[:5],
            "not_recorded": sum(1 for r in ok if r["episode"] not in counted),
            "closed_more_than_once": counted.get("<closed more than once>", (0, 0))[0],
        },
        # connections the kernel refused or dropped at listening sockets during the burst
        # (every process of this network namespace counts: other load on the machine too)
        "kernel_listen_drops": {
            name: run.kernel["close"][name] - run.kernel["start"].get(name, 0) for name in run.kernel["close"]
        },
        "client_fd_limit": min((o["fd_limit"] for o in outputs), default=None),
        "client_gc_thresholds": sorted({tuple(o["gc_threshold"]) for o in outputs}),
        "load_processes": len(outputs),
    }


def _line(figures: dict[str, Any]) -> str:
    if "unavailable" in figures:
        return f"{figures['variant']:<9} {figures['sessions']:>6}  n/a: {figures['unavailable']}"
    cpu, connect = figures["server_cpu_ms_per_session"], figures["connect_ms"]
    return (
        f"{figures['variant']:<9} {figures['sessions']:>6} {figures['env']:<11} "
        + (f"round {figures['round']}  " if "round" in figures else "")
        + f"ok {figures['success_pct']:6.2f} %  "
        f"wall {figures['wall_s']:6.1f} s  connect p50/p99 {connect['p50']}/{connect['p99']} ms  "
        f"step p50/p99/p99.9 {figures['step_ms']['p50']}/{figures['step_ms']['p99']}/{figures['step_ms']['p99.9']} ms  "
        f"server CPU/session {cpu['total']} ms (connect {cpu['connect']}, reset {cpu['reset']}, steps {cpu['steps']}, "
        f"close {cpu['close']})  RSS/session {figures['server_rss_kb_per_session']} kB "
        f"(idle {figures['server_rss_kb_per_idle_session']} kB)  steps/s {figures['steps_per_s']} "
        f"({figures['steps_per_server_cpu_s']} per server CPU s)  env-side exact "
        f"{_env_side(figures['env_side'])}  load processes {figures['load_processes']}"
        + (f"  failures {figures['failures']}" if figures["failures"] else "")
        + (f"  kernel {figures['kernel_listen_drops']}" if any(figures["kernel_listen_drops"].values()) else "")
    )


def _env_side(found: dict[str, Any]) -> str:
    """``exact/ok``, and why the others are not exact when some are not."""
    text = f"{found['exact_steps']}/{found['sessions_ok']}"
    if found["not_recorded"]:
        text += f" ({found['not_recorded']} not recorded within {LEDGER_WAIT_S:.0f} s)"
    if found["wrong_steps"]:
        text += f" (wrong: {found['wrong_steps']})"
    if found["closed_more_than_once"]:
        text += f" ({found['closed_more_than_once']} closed more than once)"
    return text


def repeated(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant, size, env and round: the median and range over its runs of steps/s, steps
    per server CPU second and step p99, and the 1-minute load average before and after them."""
    groups: dict[tuple[str, int, str, int | None], list[dict[str, Any]]] = {}
    for run in runs:
        if "unavailable" not in run:
            groups.setdefault((run["variant"], run["sessions"], run["env"], run.get("round")), []).append(run)
    rows = []
    for (variant, n, kind, number), found in groups.items():
        row: dict[str, Any] = {"variant": variant, "sessions": n, "env": kind, "runs": len(found)}
        if number is not None:
            row["round"] = number
        for key, values in (
            ("steps_per_s", [r["steps_per_s"] for r in found]),
            ("steps_per_server_cpu_s", [r["steps_per_server_cpu_s"] for r in found]),
            ("step_p99_ms", [r["step_ms"]["p99"] for r in found]),
            ("server_cpu_ms_per_session", [r["server_cpu_ms_per_session"]["total"] for r in found]),
        ):
            values = [v for v in values if v is not None]
            row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else None
        loads = [load for r in found for load in r["load_1min_before_after"]]
        row["load_1min"] = {"min": min(loads), "max": max(loads)}
        row["success_pct_min"] = min(r["success_pct"] for r in found)
        rows.append(row)
    return rows


def _repeated_line(row: dict[str, Any]) -> str:
    def spread(key: str, digits: int = 0) -> str:
        found = row[key]
        if found is None:
            return "n/a"
        return f"{found['median']:,.{digits}f} ({found['min']:,.{digits}f}-{found['max']:,.{digits}f})"

    return (
        f"{row['variant']:<9} {row['sessions']:>6} {row['env']:<11} "
        + (f"round {row['round']}  " if "round" in row else "")
        + f"{row['runs']} runs: steps/s "
        f"{spread('steps_per_s')}  per server CPU s {spread('steps_per_server_cpu_s')}  step p99 "
        f"{spread('step_p99_ms', 1)} ms  server CPU/session {spread('server_cpu_ms_per_session', 3)} ms  "
        f"load {row['load_1min']['min']:.1f}-{row['load_1min']['max']:.1f}  "
        f"ok >= {row['success_pct_min']} %"
    )


def zero_sleep_steps(n: int, total: int = ZERO_SLEEP_TOTAL_STEPS) -> int:
    """Steps per session of a zero-sleep run of ``n`` sessions: ``total`` in all, at least 3."""
    return max(3, math.ceil(total / n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("burst", "zero-sleep", "hostile"))
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=None)
    parser.add_argument("--sessions", type=int, nargs="+", help="burst sizes (default: the mode's list)")
    parser.add_argument("--env", default=None, help="burst: the env kind (default sleep: 1 s steps)")
    parser.add_argument("--steps", type=int, default=None, help="steps per session (burst: 3; zero-sleep: 20,000 / N)")
    parser.add_argument("--cap", type=float, default=120.0, help="each session's bound, from the common start (s)")
    parser.add_argument("--connect-timeout", type=float, help="our client's connect + handshake bound (s)")
    parser.add_argument(
        "--free", action="store_true", help="burst: sessions run straight through, not held at each phase (wall time)"
    )
    parser.add_argument(
        "--load-processes",
        type=int,
        default=None,
        help=f"burst: load processes sharing the sessions (default: one per {SESSIONS_PER_WORKER:,} sessions)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="bursts one after another on each server, as a trainer's rounds of episodes (default 1)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each size and env, interleaved")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--probes", type=int, default=16, help="hostile: well-behaved sessions stepping")
    args = parser.parse_args(argv)
    if args.load_processes is not None and args.load_processes < 1:
        parser.error("--load-processes must be at least 1")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.mode == "hostile":
        found = hostile_clients.run(probes=args.probes, steps=args.steps or 200, counts=hostile_clients.COUNTS)
        found["load_average"] = os.getloadavg()
        print(json.dumps(found, indent=2))
        save_figures(args.json, found)
        return 0
    names = args.variants or (["ours", "ours-x2", "upstream"] if args.mode == "burst" else ["ours"])
    sizes = args.sessions or list(BURST_SESSIONS if args.mode == "burst" else ZERO_SLEEP_SESSIONS)
    figures: dict[str, Any] = {
        "mode": args.mode,
        "limits": preflight(max(sizes)),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "runs": [],
    }
    kinds = [args.env or "sleep"] if args.mode == "burst" else ([args.env] if args.env else ["echo_inline", "echo"])
    for _ in range(args.repeats):
        for n in sizes:
            for kind in kinds:
                steps = args.steps or (3 if args.mode == "burst" else zero_sleep_steps(n))
                for name in names:
                    load_before = os.getloadavg()[0]
                    rounds = burst(
                        VARIANTS[name],
                        n,
                        kind=kind,
                        steps=steps,
                        cap_s=args.cap,
                        connect_timeout_s=args.connect_timeout,
                        loaders=args.load_processes,
                        gated=not args.free,
                        rounds=args.rounds,
                    )
                    for found in rounds:
                        found["load_average"] = os.getloadavg()
                        found["load_1min_before_after"] = (load_before, found["load_average"][0])
                        figures["runs"].append(found)
                        _log(_line(found))
    if args.repeats > 1:
        figures["medians"] = repeated(figures["runs"])
        for row in figures["medians"]:
            _log(_repeated_line(row))
    print(json.dumps(figures, indent=2))
    save_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
