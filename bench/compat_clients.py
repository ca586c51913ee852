"""The compat clients against ours and upstream's: ``python -m bench.compat_clients [--steps N] [--runs R]``.

Two comparisons, one session stepping a small echo action on our server (``bench.serve``,
env ``echo_inline``), each variant in a fresh child process, variants interleaved
(A B A B ...), medians printed with each variant's ratio to the first of its group:

- awaited: ``await env.step(action)`` through ``openenv_anyio.compat.GenericEnvClient``
  against our native ``EnvClient``, on asyncio and on trio;
- blocking, from one thread with no event loop: ``env.step(action)`` through the compat
  client against upstream ``openenv`` 0.10's own ``GenericEnvClient`` (run by the peer venv's
  Python, ``.peers/openenv-0.10.0``).

Client CPU per step is the child's whole process time (the blocking clients' loop threads
included). Nothing here is a test: figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM_PYTHON = ROOT / ".peers" / "openenv-0.10.0" / "bin" / "python"
ACTION = {"message": "hello"}

#: (group, variant name, client kind, backend); the first of a group is its baseline
VARIANTS = (
    ("awaited", "native-asyncio", "native", "asyncio"),
    ("awaited", "compat-asyncio", "compat", "asyncio"),
    ("awaited", "native-trio", "native", "trio"),
    ("awaited", "compat-trio", "compat", "trio"),
    ("blocking", "upstream-0.10-sync", "upstream-sync", "asyncio"),
    ("blocking", "compat-sync", "compat-sync", "asyncio"),
)


@dataclass(frozen=True)
class Figures:
    cpu_us_per_step: float
    steps_per_s: float


def _timed(step: Any, steps: int) -> dict[str, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        step()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"cpu_us_per_step": cpu / steps * 1e6, "steps_per_s": steps / wall}


async def _awaited(kind: str, url: str, steps: int, warmup: int) -> dict[str, float]:
    if kind == "native":
        from openenv_anyio.client import EnvClient

        client: Any = EnvClient(url)
    else:
        from openenv_anyio.compat import GenericEnvClient

        client = GenericEnvClient(base_url=url)
    async with client as env:
        await env.reset()
        for _ in range(warmup):
            await env.step(ACTION)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            await env.step(ACTION)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"cpu_us_per_step": cpu / steps * 1e6, "steps_per_s": steps / wall}


def _blocking(kind: str, url: str, steps: int, warmup: int) -> dict[str, float]:
    if kind == "upstream-sync":
        from openenv.core.generic_client import GenericEnvClient as Client
    else:
        from openenv_anyio.compat import GenericEnvClient as Client  # type: ignore[assignment]
    env = Client(base_url=url)
    try:
        env.reset()
        for _ in range(warmup):
            env.step(ACTION)
        return _timed(lambda: env.step(ACTION), steps)
    finally:
        env.close()


async def _alternating(url: str, blocks: int, steps: int, warmup: int) -> dict[str, float]:
    """Native and compat clients on one loop, blocks of ``steps`` awaited steps taken in turn."""
    from openenv_anyio.client import EnvClient
    from openenv_anyio.compat import GenericEnvClient

    cpu: dict[str, list[float]] = {"native": [], "compat": []}
    async with EnvClient(url) as native, GenericEnvClient(base_url=url) as compat:
        clients = {"native": native, "compat": compat}
        for env in clients.values():
            await env.reset()
            for _ in range(warmup):
                await env.step(ACTION)
        for _ in range(blocks):
            for name, env in clients.items():
                cpu0 = time.process_time()
                for _ in range(steps):
                    await env.step(ACTION)
                cpu[name].append((time.process_time() - cpu0) / steps * 1e6)
    return {name: statistics.median(values) for name, values in cpu.items()}


def measure_once(kind: str, backend: str, url: str, steps: int, warmup: int) -> dict[str, float]:
    """Run in the child."""
    if kind in ("native", "compat"):
        import anyio

        return anyio.run(_awaited, kind, url, steps, warmup, backend=backend)
    return _blocking(kind, url, steps, warmup)


def child_environment() -> dict[str, str]:
    """The environment of a child process run by this venv's or the peer venv's Python: this
    checkout first on its path, no ``VIRTUAL_ENV`` of ours."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("virtual_env",)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run_child(kind: str, backend: str, url: str, steps: int, warmup: int) -> dict[str, float]:
    env = child_environment()
    python = str(UPSTREAM_PYTHON) if kind == "upstream-sync" else sys.executable
    argv = [
        python,
        "-m",
        "bench.compat_clients",
        "--child",
        kind,
        backend,
        url,
        "--steps",
        str(steps),
        "--warmup",
        str(warmup),
    ]
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} ({backend}) failed: {out.stderr.strip().splitlines()[-3:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compat_clients", description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this running server instead of starting ours")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--group", choices=("awaited", "blocking"), action="append", help="only these groups")
    parser.add_argument(
        "--alternate",
        choices=("asyncio", "trio"),
        help="instead: native and compat clients in one process on this backend, alternating blocks of --steps "
        "(--runs blocks)",
    )
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BACKEND", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_once(*args.child, args.steps, args.warmup)))
        return 0
    if args.alternate:
        return _report_alternating(args)
    variants = [v for v in VARIANTS if not args.group or v[0] in args.group]
    if any(kind == "upstream-sync" for _, _, kind, _ in variants) and not UPSTREAM_PYTHON.exists():
        print(f"error: {UPSTREAM_PYTHON} is missing: run tools/install-test-deps.sh", file=sys.stderr)
        return 2
    server = None
    url = args.url
    if url is None:
        from bench.stacks import ours

        server = ours.start_server("echo_inline")
        url = server.url
    results: dict[str, list[dict[str, float]]] = {name: [] for _, name, _, _ in variants}
    try:
        for run in range(args.runs):
            for _, name, kind, backend in variants:
                results[name].append(_run_child(kind, backend, url, args.steps, args.warmup))
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    medians = {
        name: Figures(*(statistics.median(r[key] for r in runs) for key in ("cpu_us_per_step", "steps_per_s")))
        for name, runs in results.items()
    }
    print(f"server: ours echo_inline ({url}); 1 session x {args.steps} steps x {args.runs} runs, medians")
    print(f"{'group':<10}{'variant':<22}{'client CPU us/step':>20}{'ratio':>8}{'steps/s':>12}{'ratio':>8}")
    baselines: dict[str, Figures] = {}
    for group, name, _, _ in variants:
        figures = medians[name]
        base = baselines.setdefault(group, figures)
        print(
            f"{group:<10}{name:<22}{figures.cpu_us_per_step:>20.1f}"
            f"{figures.cpu_us_per_step / base.cpu_us_per_step:>8.2f}"
            f"{figures.steps_per_s:>12.0f}{figures.steps_per_s / base.steps_per_s:>8.2f}"
        )
    return 0


def _report_alternating(args: argparse.Namespace) -> int:
    import anyio

    from bench.stacks import ours

    server = None if args.url else ours.start_server("echo_inline")
    url = args.url or server.url  # type: ignore[union-attr]
    try:
        medians = anyio.run(_alternating, url, args.runs, args.steps, args.warmup, backend=args.alternate)
    finally:
        if server is not None:
            server.stop()
    print(f"{args.alternate}, one process, {args.runs} alternating blocks of {args.steps} awaited steps, medians")
    print(
        f"native {medians['native']:.1f} us/step, compat {medians['compat']:.1f} us/step, "
        f"ratio {medians['compat'] / medians['native']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
