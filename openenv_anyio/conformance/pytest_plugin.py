"""pytest plugin: ``pytest --openenv-url URL`` runs the conformance cases as test items.

One item per case ID (``openenv-conformance::WS-ERR-01``); the whole run happens once, at
the first item, because the synthetic ``SCHEMA-01`` checks every frame of the run. A
failed required case fails its item (as does the case in which the server stopped answering,
optional or not); a not-applicable case is skipped, and so is a case not run because the
server had stopped answering; an optional case
that fails and a baselined failure (``--openenv-expected-failures``) are xfailed; a
baselined case that passes fails. Without ``--openenv-url`` the plugin adds nothing, and
loading it imports nothing but pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .cases import Case
    from .runner import RunReport


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openenv", "OpenEnv protocol conformance (openenv-anyio)")
    group.addoption("--openenv-url", metavar="URL", help="run the conformance cases against the server at URL")
    group.addoption("--openenv-action", metavar="JSON", help="a valid action (default: built from GET /schema)")
    group.addoption(
        "--openenv-timeout",
        metavar="S",
        type=float,
        default=10.0,
        help="per-case timeout (default 10 s); see `openenv-anyio check --help`",
    )
    group.addoption(
        "--openenv-frame-limit-mb", metavar="MB", type=float, help="the server's inbound frame limit (WS-ERR-08)"
    )
    group.addoption("--openenv-max-sessions", metavar="N", type=int, help="the server's session limit (WS-CAP-01)")
    group.addoption(
        "--openenv-strict", action="store_true", help="members the spec does not name make a case non-strict (COMPAT-5)"
    )
    group.addoption(
        "--openenv-token", metavar="TOKEN", help="bearer token for a server that requires one (SEC-TOKEN-1)"
    )
    group.addoption(
        "--openenv-restart-command",
        metavar="CMD",
        help="a shell command that restarts the server under test (EXT-HAND-01); see `openenv-anyio check --help`",
    )
    group.addoption(
        "--openenv-restart-timeout",
        metavar="S",
        type=float,
        default=60.0,
        help="bound of the restart command, then of the session's taking back (default 60 s)",
    )
    group.addoption("--openenv-expected-failures", metavar="FILE", help="baseline of case IDs expected to fail")


class ConformanceFailure(Exception):
    """A case failed; the message carries the reason and the wire evidence."""


class _SharedRun:
    """Runs every case once, on first use, and keeps the report (or the error)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._report: RunReport | None = None
        self._error: str | None = None

    def report(self) -> RunReport:
        if self._report is None and self._error is None:
            self._report, self._error = self._run()
        if self._error is not None:
            raise ConformanceFailure(self._error)
        assert self._report is not None
        return self._report

    def _run(self) -> tuple[RunReport | None, str | None]:
        import json

        from .baseline import BaselineError, apply_baseline, load_baseline
        from .cases import CASES
        from .driver import DriverError
        from .runner import CheckOptions, run_checks_sync

        option = self._config.getoption
        try:
            action = json.loads(option("openenv_action")) if option("openenv_action") else None
            path = option("openenv_expected_failures")
            baseline = load_baseline(path, (c.id for c in CASES)) if path else {}
            report = run_checks_sync(
                CheckOptions(
                    url=option("openenv_url"),
                    action=action,
                    timeout_s=option("openenv_timeout"),
                    frame_limit_mb=option("openenv_frame_limit_mb"),
                    max_sessions=option("openenv_max_sessions"),
                    strict=option("openenv_strict"),
                    token=option("openenv_token"),
                    restart_command=option("openenv_restart_command"),
                    restart_timeout_s=option("openenv_restart_timeout"),
                )
            )
        except (ValueError, BaselineError, DriverError) as exc:
            return None, f"conformance run could not start: {exc}"
        apply_baseline(report.results, baseline)
        return report, None


class ConformanceItem(pytest.Item):
    """One conformance case as a test item."""

    def __init__(self, *, case: Case, run: _SharedRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.run = run
        for requirement in case.requirements:
            self.user_properties.append(("requirement", requirement))

    def runtest(self) -> None:
        result = self.run.report().result(self.case.id)
        if result.baseline == "unexpected-pass":
            raise ConformanceFailure(f"{self.case.id} is listed in the expected failures but now passes")
        if result.verdict.value in ("not-applicable", "not-run"):
            pytest.skip(result.reason or result.verdict.value)
        if result.verdict.is_failure:
            evidence = "\n".join(str(event) for event in result.evidence[-12:])
            message = f"{result.verdict.value}: {result.reason}\n{evidence}"
            if result.baseline == "expected-failure":
                pytest.xfail(f"expected failure (baseline): {result.reason}")
            if not result.fails_run:
                pytest.xfail(f"optional case failed: {result.reason}")
            raise ConformanceFailure(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return f"{self.case.id} [{', '.join(self.case.requirements)}] {self.case.title}\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"openenv conformance {self.case.id}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("openenv_url"):
        return
    from .cases import CASES

    run = _SharedRun(config)
    for case in CASES:
        items.append(ConformanceItem.from_parent(session, name=f"openenv-conformance::{case.id}", case=case, run=run))
