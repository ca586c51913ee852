"""Client CPU per step: ``python -m bench.client_cpu [--server ours|openenv] [--steps N] ...``.

Wall-clock throughput on a shared machine is noisy; the CPU time the *client process*
spends per step (``time.process_time``) is a steadier figure for client-side work. A server
runs in its own process (``bench.serve``, env ``echo_inline`` for ours, ``echo_async`` for
OpenEnv's); each variant steps one session in a fresh child process, variants interleaved
(A B C A B C ...), and the median of the runs is printed with its ratio to the baseline.

A variant is ``NAME=CLIENT:BACKEND[:PYTHONPATH]``: CLIENT ``ours`` or ``openenv``, BACKEND
``asyncio`` or ``trio``; PYTHONPATH (optional) runs another checkout of ``openenv_anyio``
(for before/after comparisons). Nothing here is a test: figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VARIANTS = ("openenv=openenv:asyncio", "ours-asyncio=ours:asyncio", "ours-trio=ours:trio")


@dataclass(frozen=True)
class Variant:
    name: str
    client: str
    backend: str
    pythonpath: str | None

    @classmethod
    def parse(cls, text: str) -> Variant:
        name, _, spec = text.partition("=")
        client, backend, *rest = spec.split(":", 2)
        if client not in ("ours", "openenv") or backend not in ("asyncio", "trio"):
            raise ValueError(f"bad variant {text!r}: expected NAME=ours|openenv:asyncio|trio[:PYTHONPATH]")
        if client == "openenv" and backend != "asyncio":
            raise ValueError("openenv-core's client runs on asyncio only")
        return cls(name, client, backend, rest[0] if rest else None)


async def _step_loop(client: str, url: str, steps: int, warmup: int, sessions: int = 1) -> dict[str, float]:
    """``sessions`` sessions, each reset, warmed up, then stepped ``steps`` times concurrently."""
    import anyio

    def opener() -> Any:
        if client == "openenv":
            from openenv.core.generic_client import GenericEnvClient

            return GenericEnvClient(base_url=url)
        from openenv_anyio.client import EnvClient

        return EnvClient(url)

    action = {"message": "hello"}
    envs: list[Any] = []
    async with AsyncExitStack() as stack:
        for _ in range(sessions):
            env = await stack.enter_async_context(opener())
            await env.reset()
            for _ in range(warmup):
                await env.step(action)
            envs.append(env)

        async def drive(env: Any) -> None:
            for _ in range(steps):
                await env.step(action)

        times0, cpu0, wall0 = os.times(), time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as task_group:
            for env in envs:
                task_group.start_soon(drive, env)
        cpu, wall, times = time.process_time() - cpu0, time.perf_counter() - wall0, os.times()
    total = steps * sessions
    return {
        "cpu_us_per_step": cpu / total * 1e6,
        "user_us_per_step": (times.user - times0.user) / total * 1e6,
        "steps_per_s": total / wall,
    }


def measure_once(client: str, backend: str, url: str, steps: int, warmup: int, sessions: int) -> dict[str, float]:
    """Run in the child: ``sessions`` sessions of ``steps`` timed steps each."""
    import anyio

    return anyio.run(_step_loop, client, url, steps, warmup, sessions, backend=backend)


def _run_child(variant: Variant, url: str, steps: int, warmup: int, sessions: int) -> dict[str, float]:
    env = dict(os.environ)
    paths = [variant.pythonpath] if variant.pythonpath else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    argv = [sys.executable, "-P", "-m", "bench.client_cpu", "--child", variant.client, variant.backend, url]
    argv += ["--steps", str(steps), "--warmup", str(warmup), "--sessions", str(sessions)]
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{variant.name} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("ours", "openenv"), default="ours")
    parser.add_argument("--env", help="env kind of bench.envs (default: echo_inline for ours, echo_async for openenv)")
    parser.add_argument("--url", help="use this running server instead of starting one")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=1, help="concurrent sessions in the client process")
    parser.add_argument("--variant", action="append", help="NAME=CLIENT:BACKEND[:PYTHONPATH] (repeatable)")
    parser.add_argument("--child", nargs=3, metavar=("CLIENT", "BACKEND", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_once(*args.child, args.steps, args.warmup, args.sessions)))
        return 0
    try:
        variants = [Variant.parse(text) for text in (args.variant or DEFAULT_VARIANTS)]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = None
    url = args.url
    if url is None:
        from bench.stacks import openenv_core, ours

        if args.server == "ours":
            server = ours.start_server(args.env or "echo_inline")
        else:
            server = openenv_core.start_server(args.env or "echo_async")
        url = server.url
    try:
        results: dict[str, list[dict[str, float]]] = {v.name: [] for v in variants}
        for run in range(args.runs):
            for variant in variants:
                results[variant.name].append(_run_child(variant, url, args.steps, args.warmup, args.sessions))
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    base = variants[0].name
    medians = {
        name: {
            key: statistics.median(r[key] for r in runs)
            for key in ("cpu_us_per_step", "user_us_per_step", "steps_per_s")
        }
        for name, runs in results.items()
    }
    print(
        f"server: {args.server} ({url}); {args.sessions} session(s) x {args.steps} steps x {args.runs} runs,"
        f" medians; ratio vs {base}"
    )
    print(f"{'variant':<22}{'client CPU us/step':>20}{'ratio':>8}{'of it user':>12}{'steps/s':>12}{'ratio':>8}")
    for name, m in medians.items():
        cpu_ratio = m["cpu_us_per_step"] / medians[base]["cpu_us_per_step"]
        rate_ratio = m["steps_per_s"] / medians[base]["steps_per_s"]
        print(
            f"{name:<22}{m['cpu_us_per_step']:>20.1f}{cpu_ratio:>8.2f}{m['user_us_per_step']:>12.1f}{m['steps_per_s']:>12.0f}{rate_ratio:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
