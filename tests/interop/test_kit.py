"""The conformance kit against each upstream release's own server, serving its `openenv
init` template exactly as generated (one session at a time): the required failures are the
release's real defects, recorded in ``kit-baselines/NAME.txt`` with what they are; a case
that needs two sessions at once is not applicable, not failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_anyio.conformance.baseline import load_baseline
from openenv_anyio.conformance.cases import CASES
from openenv_anyio.conformance.runner import CheckOptions, RunReport, run_checks_sync
from openenv_anyio.conformance.verdicts import Verdict
from tests.upstream_peers import Peer

BASELINES = Path(__file__).parent / "kit-baselines"


@pytest.fixture(scope="session")
def upstream_report(upstream_default_url: str) -> RunReport:
    return run_checks_sync(CheckOptions(url=upstream_default_url))


def test_required_failures_are_the_recorded_defects(peer: Peer, upstream_report: RunReport) -> None:
    baseline = BASELINES / f"{peer.name}.txt"
    assert baseline.exists(), f"record the kit's verdicts for {peer.name} in {baseline}"
    expected = set(load_baseline(baseline, (case.id for case in CASES)))
    failed = {r.case_id: r.reason for r in upstream_report.results if r.required and r.verdict.is_failure}
    assert set(failed) == expected, failed
    for case_id in expected:  # each with its evidence
        result = next(r for r in upstream_report.results if r.case_id == case_id)
        assert result.reason and result.evidence


def test_a_one_session_server_is_not_failed_for_it(upstream_report: RunReport) -> None:
    isolation = next(r for r in upstream_report.results if r.case_id == "WS-CONN-02")
    assert isolation.verdict is Verdict.NOT_APPLICABLE
    assert isolation.reason and "one session at a time" in isolation.reason and "--max-sessions" in isolation.reason


def test_demanding_two_sessions_fails_a_one_session_server(upstream_default_url: str) -> None:
    """``--max-sessions N`` stays the way to demand more: then a refused second session fails."""
    report = run_checks_sync(CheckOptions(url=upstream_default_url, only=["WS-CONN-02"], max_sessions=2))
    (isolation,) = report.results
    assert isolation.verdict is Verdict.FAIL and "CAPACITY_REACHED" in (isolation.reason or "")
