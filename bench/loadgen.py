"""A load-generating worker process for the scaling scenario (``bench.scenarios``, 9).

``python -m bench.loadgen STACK URL --sessions N --steps S --dir D --cap C --out FILE``
imports STACK's client, creates ``D/ready-<pid>``, waits for ``D/go`` (which holds the
wall-clock start time), runs N sessions starting together at that time, and writes to FILE
a JSON object: ``sessions``, one object per session (ok, seconds, error), and ``cpu_s``, the
CPU time this process spent on the burst (the client's own cost, imports and the wait for
the go signal excluded). Several workers share a large N so that one client process does
not become the bottleneck.

With ``--phased PREFIX`` (``bench.scale``) the sessions run ``sessions.run_phased_burst``
with episode ids ``PREFIX-0``, ``PREFIX-1``, ...: after each phase the worker creates
``D/at-<phase>-<pid>`` and waits for ``D/go-<phase>``, and FILE's ``sessions`` are
``SessionRecord`` objects; with ``--free`` the sessions do not wait for each other (a
phase's files then mark when the worker's last session passed it). ``fd_limit`` in FILE is
the open-file limit it ran with (raised to the hard limit), ``gc_threshold`` the collection
thresholds: the young generation's raised to :data:`YOUNG_GC_THRESHOLD` and the oldest's to
:data:`FULL_GC_THRESHOLD`, the recipe docs/client.md gives a trainer (a load process holds a
thousand sessions or more, and collections walking them cost it a third or more of its CPU,
bench/README.md "Client CPU per session").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import gc
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from bench import sessions
from bench.procs import raise_fd_limit, raise_gc_thresholds
from bench.stacks import StackUnavailable
from bench.stacks.registry import client_stack

#: the oldest generation's threshold in a load process (``ServerConfig.full_gc_threshold``'s default)
FULL_GC_THRESHOLD = 100
#: the young generation's threshold in a load process (``ServerConfig.young_gc_threshold``'s default)
YOUNG_GC_THRESHOLD = 10_000


def _wait_for_go(path: Path, timeout_s: float) -> float | None:
    """The start time written to ``path`` by the harness, or None if it never comes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return float(path.read_text())
        time.sleep(0.01)
    return None


async def _barrier(folder: Path, phase: str, *, timeout_s: float) -> None:
    """Say this worker's sessions are done with ``phase``; wait for the harness's go."""
    (folder / f"at-{phase}-{os.getpid()}").touch()
    go = folder / f"go-{phase}"
    with anyio.fail_after(timeout_s):
        while not go.exists():
            await anyio.sleep(0.005)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen")
    parser.add_argument("stack")
    parser.add_argument("url")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dir", type=Path, required=True, help="where the ready and go files live")
    parser.add_argument("--cap", type=float, required=True)
    parser.add_argument("--backend", default=None)
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        help="the client's bound on connect + opening handshake, in seconds (ours only; default: the client's own)",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--phased", metavar="PREFIX", help="a phased burst whose episode ids start with PREFIX")
    parser.add_argument("--free", action="store_true", help="phased: the sessions do not wait for each other")
    args = parser.parse_args(argv)
    fd_limit = raise_fd_limit()
    raise_gc_thresholds(young=YOUNG_GC_THRESHOLD, oldest=FULL_GC_THRESHOLD)
    try:
        stack = client_stack(args.stack)
    except StackUnavailable as exc:
        print(str(exc), file=sys.stderr)
        return 2
    opener = stack.open_session
    if args.connect_timeout is not None:
        if args.stack != "ours":
            print("--connect-timeout applies to our client only", file=sys.stderr)
            return 2
        opener = functools.partial(stack.open_session, connect_timeout_s=args.connect_timeout)
    (args.dir / f"ready-{os.getpid()}").touch()
    start_at = _wait_for_go(args.dir / "go", timeout_s=120.0)
    if start_at is None:
        print("no go signal", file=sys.stderr)
        return 3
    if args.phased is not None:
        burst: Callable[[], Awaitable[list[Any]]] = functools.partial(
            sessions.run_phased_burst,
            opener,
            args.url,
            [f"{args.phased}-{i}" for i in range(args.sessions)],
            args.steps,
            start_at=start_at,
            cap_s=args.cap,
            between=functools.partial(_barrier, args.dir, timeout_s=args.cap + 60.0),
            hold=not args.free,
        )
    else:
        burst = functools.partial(
            sessions.run_burst,
            opener,
            args.url,
            args.sessions,
            args.steps,
            start_at=start_at,
            cap_s=args.cap,
        )
    cpu_before = time.process_time()
    outcomes = anyio.run(burst, backend=args.backend or stack.BACKEND)
    cpu_s = time.process_time() - cpu_before
    found = {
        "sessions": [dataclasses.asdict(o) for o in outcomes],
        "cpu_s": cpu_s,
        "fd_limit": fd_limit,
        "gc_threshold": gc.get_threshold(),
    }
    args.out.write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
