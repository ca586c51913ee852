"""``openenv-anyio check URL``: run the conformance cases against a server and report.

Exit status: 0 when no required case fails beyond the expected-failures baseline and no
baselined case passes; 1 otherwise; 2 for bad arguments (an ``--action`` the server's
``/schema`` refuses included), an unreachable server, one that is not an OpenEnv server or
one that requires a bearer token the run lacks; 130 when interrupted (Ctrl-C), 143 when
stopped by SIGTERM (either way the verdicts so far are shown).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import CheckOptions
    from .runner import RunReport


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return int(text)


FLEET_HELP = """\
certifying a fleet (several servers behind one balancer):
  Each case sends its own random OpenEnv-Affinity key (EXT-AFF-1) on every WebSocket it
  opens, and the report's wire log shows it. Behind a balancer that hashes on that header
  (deploy/haproxy, deploy/nginx) a case's sessions, their resumes and its dashboard reach
  one server, so the verdicts are those of one server; the balancer may choose another
  server for the next case. Run check against the balancer's URL to certify the path your
  agents take, and against each server's own URL to certify every server; servers of one
  fleet should serve the same environment with the same limits. A balancer that does not
  hash on the header (round-robin) fails the resume case EXT-RES-01.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = FLEET_HELP
    parser.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        help="the server's base URL: http(s)://, ws(s):// or HOST:PORT (e.g. http://127.0.0.1:8000); "
        "not needed with --list",
    )
    parser.add_argument(
        "--action", metavar="JSON", help="a valid action as a JSON object (default: built from GET /schema)"
    )
    parser.add_argument(
        "--only", metavar="ID", nargs="+", help="run only these case IDs or groups (e.g. WS-ERR-01 HTTP WS)"
    )
    parser.add_argument("--json", metavar="FILE", dest="json_file", help="write the JSON report to FILE")
    parser.add_argument("--junit", metavar="FILE", dest="junit_file", help="write a JUnit XML report to FILE")
    parser.add_argument(
        "--expected-failures", metavar="FILE", help="baseline: case IDs expected to fail, one per line (# comments)"
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        default=None,
        help="bearer token for a server that requires one (default: $OPENENV_TOKEN); "
        "sent with every request, never shown",
    )
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=_positive,
        default=10.0,
        help=(
            "per-case timeout in seconds (default 10); after a timeout, GET /health tells a slow server "
            "from one that stopped answering (then the later cases are not run)"
        ),
    )
    parser.add_argument(
        "--frame-limit-mb",
        metavar="MB",
        type=_positive,
        help="the server's inbound frame limit: WS-ERR-08 sends MB MiB + 1 byte and expects close 1009 "
        "(skipped without it)",
    )
    parser.add_argument(
        "--max-sessions",
        metavar="N",
        type=_positive_int,
        help="the server's session limit: WS-CAP-01 opens N sessions and expects CAPACITY_REACHED on one more",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a member the spec does not name (ignored by receivers, COMPAT-1) makes its case non-strict "
        "instead of a note",
    )
    parser.add_argument(
        "--restart-command",
        metavar="CMD",
        help="a shell command that restarts the server under test (e.g. 'systemctl restart myenv'); "
        "EXT-HAND-01 runs it in the middle of an episode and checks that the session is taken back "
        "(a server that answers handover in GET /metadata; without the option that case is not exercised)",
    )
    parser.add_argument(
        "--restart-timeout",
        metavar="S",
        type=_positive,
        default=60.0,
        help="how long the restart command may run, and then how long the restarted server may take "
        "to take the session back (default 60)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")


def _fail(message: str) -> int:
    print(f"openenv-anyio check: error: {message}", file=sys.stderr)
    return 2


def _names_a_server(text: str) -> bool:
    """Whether an ``--only`` value is the server's URL (``http://...``, ``HOST:PORT``): case
    IDs and groups hold no ``:``, ``/`` or ``.``."""
    from .cases import select_cases

    try:
        select_cases([text])
    except ValueError:
        return any(mark in text for mark in ":/.")
    return False


def _with_scheme(url: str) -> str:
    """``HOST:PORT`` as the client reads it (its WebSocket address); a URL with a scheme as given."""
    if "://" in url:
        return url
    from ..client.urls import websocket_address

    try:
        return websocket_address(url).url
    except ValueError:
        return url  # Target.from_url says what is wrong with it


def _parse_action(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"--action is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("--action must be a JSON object")
    return value


class _Interrupted(Exception):
    """SIGINT (Ctrl-C) or SIGTERM came before the run ended: ``signum`` is which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


async def _check_until_interrupted(options: CheckOptions, on_start: Callable[[RunReport], None]) -> RunReport:
    """The run's report; :class:`_Interrupted` when SIGINT (Ctrl-C) or SIGTERM came first:
    the signal cancels the run (the report given to ``on_start`` keeps the cases that
    finished) instead of raising KeyboardInterrupt wherever the run happens to be."""
    import signal

    import trio

    from .driver import DriverError
    from .runner import run_checks

    reports: list[RunReport] = []
    errors: list[DriverError] = []
    received: list[int] = []

    async def check(cancel_scope: trio.CancelScope) -> None:
        try:
            reports.append(await run_checks(options, on_start=on_start))
        except DriverError as exc:  # raised below, outside the nursery's exception group
            errors.append(exc)
        cancel_scope.cancel()

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(check, nursery.cancel_scope)
            async for signum in signals:
                received.append(signum)
                nursery.cancel_scope.cancel()
                break
    if errors:
        raise errors[0]
    if received or not reports:
        raise _Interrupted(received[0] if received else signal.SIGINT)
    return reports[0]


def _report_interrupted(report: RunReport | None, signum: int) -> int:
    """Ctrl-C or SIGTERM: the verdicts of the cases that finished (no report files), then
    one line; the exit status is the shell's for that signal (130, 143)."""
    import signal

    from .reports import print_terminal

    how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    if report is None:
        print(f"openenv-anyio check: {how} before the first case", file=sys.stderr)
        return 128 + signum
    print_terminal(report)
    print(
        f"openenv-anyio check: {how} after {len(report.results)} of {report.selected} cases "
        "(the verdicts above; no report file written)",
        file=sys.stderr,
    )
    return 128 + signum


def run(args: argparse.Namespace) -> int:
    import trio

    from .. import startup
    from .baseline import BaselineError, apply_baseline, load_baseline
    from .cases import CASES, select_cases
    from .driver import DriverError, Target
    from .reports import print_terminal, write_json, write_junit
    from .runner import CheckOptions

    startup.done()  # a run's Ctrl-C shows the verdicts so far
    if args.list:
        for case in CASES:
            print(
                f"{case.id:<12} {'required' if case.required else 'optional':<8}  {case.title}  "
                f"[{', '.join(case.requirements)}]"
            )
        return 0
    if args.url is None and args.only and _names_a_server(args.only[-1]):
        args.url = args.only.pop()  # ``--only ID... URL``: the selectors end where the URL begins
    if args.url is None:
        return _fail(
            "the URL of the server to check is required: openenv-anyio check URL [--only ID ...] "
            "(or --list to list the cases)"
        )
    try:
        action = _parse_action(args.action)
        args.url = _with_scheme(args.url)
        Target.from_url(args.url)
        select_cases(args.only)
        baseline = load_baseline(args.expected_failures, (c.id for c in CASES)) if args.expected_failures else {}
    except (ValueError, BaselineError) as exc:
        return _fail(str(exc))
    options = CheckOptions(
        url=args.url,
        action=action,
        only=args.only,
        timeout_s=args.timeout,
        frame_limit_mb=args.frame_limit_mb,
        max_sessions=args.max_sessions,
        strict=args.strict,
        token=args.token or os.environ.get("OPENENV_TOKEN") or None,
        validation_token=os.environ.get("OPENENV_VALIDATION_TOKEN") or None,  # the VAL cases (VAL-OPEN-1)
        restart_command=args.restart_command or None,
        restart_timeout_s=args.restart_timeout,
    )
    started: list[RunReport] = []
    try:
        report = trio.run(_check_until_interrupted, options, started.append)
    except DriverError as exc:
        return _fail(str(exc))
    except _Interrupted as stop:
        return _report_interrupted(started[0] if started else None, stop.signum)
    apply_baseline(report.results, baseline)
    try:
        if args.json_file:
            write_json(report, args.json_file)
        if args.junit_file:
            write_junit(report, args.junit_file)
    except OSError as exc:
        return _fail(f"cannot write report: {exc.strerror or exc}: {exc.filename}")
    print_terminal(report)
    return 0 if report.passed else 1
