"""Server CPU time per step: ``python -m bench.server_cpu VARIANT ... [--sessions 1 16]``.

Wall-clock throughput on a shared machine moves by tens of percent between runs; the CPU
time the server process spends per step (``utime + stime`` of ``/proc/PID/stat``, every
thread included, divided by the steps served) moves far less, so it is the figure to
compare when changing the server. Variants run interleaved (A B C A B C ...) and each
figure is the median over ``--repeats`` runs.

A VARIANT is ``SERVER[:KIND][@CLIENT][=PYTHONPATH]``:

- SERVER: a stack of ``bench.serve`` (``ours``, ``ours-nometrics``, ``ours-mpmetrics``, ``openenv``,
  ``echo-hypercorn``, ``echo-uvicorn``);
- KIND: an env kind of ``bench.envs`` (default ``echo``), or one our server serves through
  its openenv-core adapter (``echo_adapted``) or in its own env API with the same models
  (``echo_models``), ``ours`` stacks only;
- CLIENT: ``raw`` (default: pre-encoded frames, answers not decoded), ``openenv`` or ``ours``;
- PYTHONPATH: put this directory first on the server's ``PYTHONPATH`` (compare another
  checkout of the server, e.g. a snapshot of the code before a change).

Example: ``python -m bench.server_cpu ours:echo ours:echo=/tmp/base openenv:echo@openenv``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from bench.envs import ENV_KINDS
from bench.procs import ServerProcess, raise_fd_limit, start_server
from bench.serve import OPENENV_CORE_KINDS, STACKS
from bench.stacks.registry import client_stack

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Variant:
    server: str
    kind: str
    client: str
    pythonpath: str | None

    @classmethod
    def parse(cls, text: str) -> Variant:
        """The variant ``text`` names (``argparse.ArgumentTypeError`` for an unknown server or env kind)."""
        rest, _, pythonpath = text.partition("=")
        rest, _, client = rest.partition("@")
        server, _, kind = rest.partition(":")
        variant = cls(server, kind or "echo", client or "raw", pythonpath or None)
        if variant.server not in STACKS:
            raise argparse.ArgumentTypeError(f"unknown server {variant.server!r} (one of {', '.join(STACKS)})")
        kinds = [*ENV_KINDS, *OPENENV_CORE_KINDS]
        if variant.kind not in kinds:
            raise argparse.ArgumentTypeError(f"unknown env kind {variant.kind!r} (one of {', '.join(kinds)})")
        if variant.kind in OPENENV_CORE_KINDS and not variant.server.startswith("ours"):
            raise argparse.ArgumentTypeError(f"env kind {variant.kind!r} is served by our server only")
        return variant

    @property
    def label(self) -> str:
        text = self.server if self.server.startswith("echo-") else f"{self.server}:{self.kind}"
        if self.client != "raw":
            text += f"@{self.client}"
        return text + (f"={self.pythonpath}" if self.pythonpath else "")


@dataclass
class Figures:
    cpu_us_per_step: list[float] = field(default_factory=list)
    steps_per_s: list[float] = field(default_factory=list)
    errors: int = 0


def cpu_seconds(pid: int) -> float:
    """``utime + stime`` of process ``pid`` (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


@contextmanager
def serve(variant: Variant) -> Iterator[ServerProcess]:
    """Start the variant's server (with its own PYTHONPATH first, if any); stop it after."""
    argv = [variant.server] if variant.server.startswith("echo-") else [variant.server, variant.kind]
    server = start_server(variant.label, argv, wait=False, pythonpath=variant.pythonpath)
    # openenv-core's imports (FastAPI, gradio, FastMCP) take tens of seconds on a busy machine
    slow_start = variant.server == "openenv" or variant.kind in OPENENV_CORE_KINDS
    server.wait_ready(120.0 if slow_start else 30.0)
    try:
        yield server
    finally:
        server.stop()


def run_once(variant: Variant, server: ServerProcess, sessions: int, steps: int) -> tuple[float, float, int]:
    """(server CPU us per step, steps/s, failed sessions) of one run of ``steps`` steps in all."""
    module = client_stack(variant.client)
    per_session = max(1, steps // sessions)
    before = cpu_seconds(server.pid)
    result = anyio.run(
        lambda: module.run_sessions(server.url, sessions, per_session, duration_s=None, timeout_s=600.0),
        backend=module.BACKEND,
    )
    used = cpu_seconds(server.pid) - before
    served = max(1, result.steps)
    return used / served * 1e6, result.steps_per_s, len(result.errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", type=Variant.parse, metavar="VARIANT")
    parser.add_argument("--sessions", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--steps", type=int, default=20_000, help="steps per run, over all sessions")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    raise_fd_limit()
    servers: list[ServerProcess] = []
    contexts = [serve(v) for v in args.variants]
    try:
        for context in contexts:
            servers.append(context.__enter__())
        for variant, server in zip(args.variants, servers):  # warm both ends
            run_once(variant, server, 1, 200)
        for sessions in args.sessions:
            figures = {v: Figures() for v in args.variants}
            for _ in range(args.repeats):
                for variant, server in zip(args.variants, servers):
                    cpu, rate, errors = run_once(variant, server, sessions, args.steps)
                    entry = figures[variant]
                    entry.errors += errors
                    entry.cpu_us_per_step.append(cpu)
                    entry.steps_per_s.append(rate)
            base = statistics.median(figures[args.variants[0]].cpu_us_per_step)
            print(f"{sessions} session(s), {args.steps} steps per run, median of {args.repeats}:")
            for variant in args.variants:
                entry = figures[variant]
                cpu = statistics.median(entry.cpu_us_per_step)
                spread = "/".join(f"{value:.0f}" for value in entry.cpu_us_per_step)
                print(
                    f"  {variant.label:<40} {cpu:8.1f} us CPU/step ({cpu / base:5.2f}x)  [{spread}]"
                    f"  {statistics.median(entry.steps_per_s):8,.0f} steps/s"
                    + (f"  {entry.errors} errors" if entry.errors else "")
                )
            sys.stdout.flush()
    finally:
        for context in reversed(contexts[: len(servers)]):
            context.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
