"""``python -m bench [--quick] [--json FILE] [--only SCENARIO ...]``: run, print, save."""

from __future__ import annotations

import argparse
import signal
import sys
import time
import traceback
from pathlib import Path

from bench.measure import Context, Profile
from bench.pool import ServerPool
from bench.procs import raise_fd_limit
from bench.report import print_table, write_json
from bench.results import Row
from bench.scenarios import SCENARIOS, select


def build_parser() -> argparse.ArgumentParser:
    listing = "; ".join(f"{s.id}/{s.slug}: {s.title}" for s in SCENARIOS)
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="openenv-anyio vs openenv-core, side by side on loopback. Scenarios: " + listing,
    )
    parser.add_argument("--quick", action="store_true", help="fewer and shorter runs (about a minute)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--only", nargs="+", metavar="SCENARIO", help="scenario ids or names (default: all)")
    return parser


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM: unwind at once, whatever event loop is running.

    asyncio and trio only take over SIGINT while the default handler is installed (and then
    may let a measurement finish first); this handler makes the interrupt reach the harness's
    ``finally`` blocks, which stop every server and worker.
    """
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        scenarios = select(args.only)
    except ValueError as exc:
        print(f"python -m bench: {exc}", file=sys.stderr)
        return 2
    fd_limit = raise_fd_limit()
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    profile = Profile.make(args.quick)
    rows: list[Row] = []
    started = time.monotonic()
    pool = ServerPool()
    try:
        with pool:
            ctx = Context(profile, pool)
            for scenario in scenarios:
                ctx.log(f"[{scenario.id}] {scenario.title} ... ({time.monotonic() - started:.0f} s)")
                try:
                    rows += scenario.run(ctx)
                except Exception:  # one broken scenario must not lose the others' results
                    traceback.print_exc()
                    ctx.log(f"[{scenario.id}] failed; continuing")
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped. Partial results:", file=sys.stderr)
    print_table(rows, sys.stdout)
    for crash in pool.crashes:
        print(f"\nserver crash (restarted): {crash}")
    elapsed = time.monotonic() - started
    print(f"\n{len(rows)} rows in {elapsed:.0f} s (fd limit {fd_limit})")
    if args.json:
        settings = {
            "quick": profile.quick,
            "profile": profile.__dict__,
            "elapsed_s": round(elapsed, 1),
            "server_crashes": pool.crashes,
        }
        write_json(rows, args.json, settings=settings)
        print(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
