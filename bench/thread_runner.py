"""Cost of one call through a session's worker thread (``ThreadRunner``) vs trio's
``to_thread.run_sync`` (no thread affinity) and an inline call, with 1 and 16 sessions.

Usage: ``python bench/thread_runner.py [--calls 5000]``.
"""

from __future__ import annotations

import argparse

import trio

from openenv_anyio.server.execution.runner import InlineRunner, ThreadRunner


def noop() -> None:
    return None


class ToThread:
    async def run(self, fn):  # type: ignore[no-untyped-def]
        return await trio.to_thread.run_sync(fn)

    async def aclose(self) -> None:
        return None


async def per_call_us(make, sessions: int, calls: int) -> float:  # type: ignore[no-untyped-def]
    runners = [make() for _ in range(sessions)]

    async def drive(runner) -> None:  # type: ignore[no-untyped-def]
        for _ in range(calls):
            await runner.run(noop)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for runner in runners:
            nursery.start_soon(drive, runner)
    elapsed = trio.current_time() - start
    for runner in runners:
        await runner.aclose()
    return elapsed / (sessions * calls) * 1e6


async def main(calls: int) -> None:
    for name, make in (("inline", InlineRunner), ("ThreadRunner", ThreadRunner), ("to_thread", ToThread)):
        cells = [f"{n:2} sessions: {await per_call_us(make, n, calls):7.1f} us/call" for n in (1, 16)]
        print(f"{name:13}", "   ".join(cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    trio.run(main, parser.parse_args().calls)
