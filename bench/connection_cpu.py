"""Server CPU per connection: ``python -m bench.connection_cpu VARIANT ... [--connections 1000]``.

Each run opens ``--connections`` WebSocket connections at once, sends one reset frame on
each, reads the answer and closes; the figure is the server process's CPU time
(``utime + stime``, every thread) divided by the connections. It is the server's fixed cost
per session, the part of scenario 9 (thousands of sessions connecting together) that no
amount of concurrency hides: a single-process server needs at least
``sessions x CPU per connection`` before its last session has connected.

VARIANTs are those of :mod:`bench.server_cpu` (``SERVER[:KIND][@CLIENT][=PYTHONPATH]``);
the default client is the raw one (``websockets``, answers not decoded), so every server,
the bare echoes included, is measured with the same client. Runs are interleaved and each
figure is the median over ``--repeats`` runs.

Example: ``python -m bench.connection_cpu echo-hypercorn echo-uvicorn ours:echo_inline ours:echo openenv:echo``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import ExitStack

import anyio

from bench.procs import ServerProcess, raise_fd_limit
from bench.server_cpu import Variant, cpu_seconds, serve
from bench.stacks.registry import client_stack


def run_once(variant: Variant, server: ServerProcess, connections: int) -> tuple[float, int]:
    """(server CPU ms per connection, failed connections) of one burst of ``connections``."""
    module = client_stack(variant.client)
    failures = 0

    async def one() -> None:
        nonlocal failures
        try:
            async with module.open_session(server.url) as session:
                await session.reset(seed=1)
        except Exception:
            failures += 1

    async def burst() -> None:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:
                for _ in range(connections):
                    tg.start_soon(one)

    before = cpu_seconds(server.pid)
    anyio.run(burst, backend=module.BACKEND)
    time.sleep(0.3)  # the server finishes closing the last connections
    used = cpu_seconds(server.pid) - before
    return used / connections * 1e3, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.connection_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", type=Variant.parse, metavar="VARIANT")
    parser.add_argument("--connections", type=int, default=1000, help="connections per run, all at once (default 1000)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.connections < 1 or args.repeats < 1:
        parser.error("--connections and --repeats must be at least 1")
    raise_fd_limit()
    with ExitStack() as stack:
        servers = [stack.enter_context(serve(v)) for v in args.variants]
        for variant, server in zip(args.variants, servers):  # warm both ends
            run_once(variant, server, 20)
        figures: dict[Variant, list[float]] = {v: [] for v in args.variants}
        failed = dict.fromkeys(args.variants, 0)
        for _ in range(args.repeats):
            for variant, server in zip(args.variants, servers):
                ms, failures = run_once(variant, server, args.connections)
                figures[variant].append(ms)
                failed[variant] += failures
        base = statistics.median(figures[args.variants[0]])
        print(f"{args.connections} connections at once (connect, reset, close), median of {args.repeats}:")
        for variant in args.variants:
            ms = statistics.median(figures[variant])
            spread = "/".join(f"{value:.2f}" for value in figures[variant])
            print(
                f"  {variant.label:<32} {ms:6.3f} ms server CPU/connection ({ms / base:5.2f}x)  [{spread}]"
                + (f"  {failed[variant]} failed" if failed[variant] else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
