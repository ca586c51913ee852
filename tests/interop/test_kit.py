"""The conformance kit against each upstream release's own server (``uvicorn server.app:app``)
for its `openenv init` template, one run per peer of ``tools/test-deps/peers/``: the required
failures are the release's real defects, recorded in ``kit-baselines/NAME.txt`` with what they
are (a new release needs its baseline file next to its requirements file).

A release whose server stops answering altogether during the run (openenv-core 0.3.0's
template raised to a few sessions stops answering anything, HTTP included, after about a
dozen WebSocket sessions) records the case where the kit found it with "stops answering" in
its baseline comment: that case is a failure whose verdict says so, and the cases after it
are not run (the kit's liveness probe) instead of each timing out.

Against the template exactly as generated (one session at a time) a case that needs two
sessions at once is not applicable, not failed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openenv_anyio.conformance.baseline import load_baseline
from openenv_anyio.conformance.cases import CASES
from openenv_anyio.conformance.runner import CheckOptions, RunReport, run_checks_sync
from openenv_anyio.conformance.verdicts import Verdict
from tests.upstream_peers import Peer, serve_ours, serve_upstream

from .conftest import SESSIONS, TEMPLATE_TARGET

BASELINES = Path(__file__).parent / "kit-baselines"
#: what a baseline comment says of the case in which the server stopped answering
STOPS_ANSWERING = "stops answering"


def recorded_defects(peer: Peer) -> dict[str, str]:
    """Case ID -> why, from ``kit-baselines/NAME.txt``."""
    baseline = BASELINES / f"{peer.name}.txt"
    assert baseline.exists(), f"record the kit's verdicts for {peer.name} in {baseline}"
    return load_baseline(baseline, (case.id for case in CASES))


def required_failures(report: RunReport) -> dict[str, str | None]:
    """The failures that fail a run without a baseline: required cases, and the case in
    which the server stopped answering (whether it is required or not)."""
    return {r.case_id: r.reason for r in report.results if r.verdict.is_failure and (r.required or r.ended_run)}


@pytest.fixture(scope="module")
def kit_report(peer: Peer, upstream_template: Callable[..., Path]) -> RunReport:
    """The kit against the peer's template raised to a few sessions (WS-CONN-02 runs); a
    server of its own, since a release's server may not survive the run."""
    with serve_upstream(peer, upstream_template(peer, SESSIONS)) as url:
        return run_checks_sync(CheckOptions(url=url))


@pytest.fixture(scope="module")
def one_session_url(peer: Peer, upstream_template: Callable[..., Path]) -> Iterator[str]:
    """The peer's server for its template exactly as generated: one session at a time."""
    with serve_upstream(peer, upstream_template(peer)) as url:
        yield url


def test_required_failures_are_the_recorded_defects(peer: Peer, kit_report: RunReport) -> None:
    expected = recorded_defects(peer)
    failed = required_failures(kit_report)
    assert set(failed) == set(expected), failed
    for case_id in expected:  # each with its evidence
        result = kit_report.result(case_id)
        assert result.reason and result.evidence


def test_a_server_that_stops_answering_is_recorded_and_ends_the_run(peer: Peer, kit_report: RunReport) -> None:
    """Where the baseline says the server stops answering, the kit says it once, in that case,
    and runs nothing after it but SCHEMA-01; elsewhere every case got a verdict of its own."""
    stops = [case_id for case_id, why in recorded_defects(peer).items() if STOPS_ANSWERING in why]
    verdicts = [r.verdict for r in kit_report.results]
    if not stops:
        assert kit_report.stopped is None and Verdict.NOT_RUN not in verdicts
        return
    (case_id,) = stops
    assert kit_report.stopped is not None and kit_report.stopped.case_id == case_id
    result = kit_report.result(case_id)
    assert result.verdict is Verdict.TIMEOUT and result.ended_run
    assert result.reason and "the server stopped answering after" in result.reason and "GET /health" in result.reason
    later = kit_report.results[kit_report.results.index(result) + 1 :]
    assert {r.case_id for r in later if r.verdict is not Verdict.NOT_RUN} == {"SCHEMA-01"}


def test_a_one_session_server_is_not_failed_for_it(peer: Peer, one_session_url: str) -> None:
    report = run_checks_sync(CheckOptions(url=one_session_url, only=["WS-CONN-02"]))
    (isolation,) = report.results
    assert isolation.verdict is Verdict.NOT_APPLICABLE
    assert isolation.reason and "one session at a time" in isolation.reason and "--max-sessions" in isolation.reason


def test_demanding_two_sessions_fails_a_one_session_server(peer: Peer, one_session_url: str) -> None:
    """``--max-sessions N`` stays the way to demand more: then a refused second session fails."""
    report = run_checks_sync(CheckOptions(url=one_session_url, only=["WS-CONN-02"], max_sessions=2))
    (isolation,) = report.results
    assert isolation.verdict is Verdict.FAIL and "CAPACITY_REACHED" in (isolation.reason or "")


def test_validation_telemetry_is_not_offered_and_replays_agree(peer: Peer, one_session_url: str) -> None:
    """A release without validation telemetry (PROTOCOL.md section 13): the kit says "not
    offered", never a failure, with or without a token; the template's episodes replay
    identically and a reset forgets the previous one (VAL-DET-1, VAL-ISO-1), unless its
    environment keeps no episode id (WS-RESET-03 in the baseline: a fresh uuid4 in every
    state, which upstream's runtime.episode_determinism fails as well)."""
    token = "interop-validation-token-" + "0" * 32
    report = run_checks_sync(CheckOptions(url=one_session_url, only=["VAL"], validation_token=token))
    verdicts = {r.case_id: (r.verdict, r.reason or "") for r in report.results}
    # without a token the telemetry cases open no session (openenv-core 0.3.0's server stops
    # answering after about a dozen)
    without = run_checks_sync(CheckOptions(url=one_session_url, only=["VAL-02", "VAL-03"]))
    for result in (*report.results[:3], *without.results):
        assert result.verdict is Verdict.NOT_APPLICABLE and "not offered" in (result.reason or ""), result
    if "WS-RESET-03" not in recorded_defects(peer):
        assert verdicts["VAL-04"][0] is verdicts["VAL-05"][0] is Verdict.PASS, verdicts
    else:
        assert verdicts["VAL-04"][0] is Verdict.FAIL and "episode_id" in verdicts["VAL-04"][1], verdicts


def test_our_server_serving_the_template_passes_every_val_case(
    peer: Peer, upstream_template: Callable[..., Path]
) -> None:
    """``OPENENV_VALIDATION_TOKEN=... openenv-anyio serve`` (the way upstream's validator
    starts a server) of the release's template through our adapter: telemetry is offered and
    every VAL case passes, whatever the release's own server lacks; but the replays of a
    template that keeps no episode id (WS-RESET-03 in the baseline) differ in it."""
    token = "interop-validation-token-" + "1" * 32
    with serve_ours(
        peer, upstream_template(peer), TEMPLATE_TARGET, extra_environ={"OPENENV_VALIDATION_TOKEN": token}
    ) as url:
        report = run_checks_sync(CheckOptions(url=url, only=["VAL"], validation_token=token))
    verdicts = {r.case_id: (r.verdict, r.reason or "") for r in report.results}
    for case_id in ("VAL-01", "VAL-02", "VAL-03"):
        assert verdicts[case_id][0] is Verdict.PASS, verdicts
    replays = (Verdict.PASS, Verdict.PASS) if "WS-RESET-03" not in recorded_defects(peer) else (Verdict.FAIL,) * 2
    assert (verdicts["VAL-04"][0], verdicts["VAL-05"][0]) == replays, verdicts
