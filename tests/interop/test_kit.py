"""The conformance kit against openenv 0.10's own server for its `openenv init` template:
the required failures are the release's real defects, recorded in ``kit-baselines/NAME.txt``
with what they are. Against openenv 0.10's template
exactly as generated (one session at a time) a case that needs two sessions at once is not
applicable, not failed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openenv_anyio.conformance.baseline import load_baseline
from openenv_anyio.conformance.cases import CASES
from openenv_anyio.conformance.runner import CheckOptions, RunReport, run_checks_sync
from openenv_anyio.conformance.verdicts import Verdict
from tests.upstream_peers import peer_named, serve_upstream

from .conftest import SESSIONS

BASELINES = Path(__file__).parent / "kit-baselines"


@pytest.fixture(scope="module")
def upstream_report(upstream_template: Callable[..., Path]) -> Iterator[RunReport]:
    """The kit against openenv 0.10's template raised to a few sessions (WS-CONN-02 runs).

    openenv-core 0.3.0's own kit verdicts are in ``tests/conformance/test_openenv_core.py``:
    its `openenv init` template server stops answering (HTTP included) after the kit's
    WS-ERR-02 frame, so every later case times out there."""
    peer = peer_named("openenv")
    with serve_upstream(peer, upstream_template(peer, SESSIONS)) as url:
        yield run_checks_sync(CheckOptions(url=url))


@pytest.fixture(scope="module")
def one_session_url(upstream_template: Callable[..., Path]) -> Iterator[str]:
    """openenv 0.10's server for its template exactly as generated: one session at a time."""
    peer = peer_named("openenv")
    with serve_upstream(peer, upstream_template(peer)) as url:
        yield url


@pytest.fixture(scope="module")
def one_session_report(one_session_url: str) -> RunReport:
    return run_checks_sync(CheckOptions(url=one_session_url))


def test_required_failures_are_the_recorded_defects(upstream_report: RunReport) -> None:
    peer = peer_named("openenv")
    baseline = BASELINES / f"{peer.name}.txt"
    assert baseline.exists(), f"record the kit's verdicts for {peer.name} in {baseline}"
    expected = set(load_baseline(baseline, (case.id for case in CASES)))
    failed = {r.case_id: r.reason for r in upstream_report.results if r.required and r.verdict.is_failure}
    assert set(failed) == expected, failed
    for case_id in expected:  # each with its evidence
        result = next(r for r in upstream_report.results if r.case_id == case_id)
        assert result.reason and result.evidence


def test_a_one_session_server_is_not_failed_for_it(one_session_report: RunReport) -> None:
    baseline = BASELINES / f"{peer_named('openenv').name}.txt"
    expected = set(load_baseline(baseline, (case.id for case in CASES)))
    failed = {r.case_id: r.reason for r in one_session_report.results if r.required and r.verdict.is_failure}
    assert set(failed) == expected, failed
    isolation = next(r for r in one_session_report.results if r.case_id == "WS-CONN-02")
    assert isolation.verdict is Verdict.NOT_APPLICABLE
    assert isolation.reason and "one session at a time" in isolation.reason and "--max-sessions" in isolation.reason


def test_demanding_two_sessions_fails_a_one_session_server(one_session_url: str) -> None:
    """``--max-sessions N`` stays the way to demand more: then a refused second session fails."""
    report = run_checks_sync(CheckOptions(url=one_session_url, only=["WS-CONN-02"], max_sessions=2))
    (isolation,) = report.results
    assert isolation.verdict is Verdict.FAIL and "CAPACITY_REACHED" in (isolation.reason or "")
