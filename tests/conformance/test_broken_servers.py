"""The kit catches bugs: each deliberately broken server is flagged by the case meant for it,
and the correct minimal server gets no failure at all.
"""

from __future__ import annotations

import time

import pytest

from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync

from .conftest import EXTENSION_CASES, MINIMAL_MAX_SESSIONS
from .minimal_server import Flaws, MinimalServer, serve_in_thread
from .stubborn_server import serve_stubborn


def test_correct_server_passes_every_case(minimal_url: str) -> None:
    options = CheckOptions(minimal_url, timeout_s=10, frame_limit_mb=1, max_sessions=MINIMAL_MAX_SESSIONS)
    report = run_checks_sync(options)
    not_passed = {case_id: v for case_id, v in report.verdicts().items() if v != "pass"}
    expected = {case_id: "not-applicable" for case_id in EXTENSION_CASES}  # a base server (EXT-NEG-1)
    # no MCP surface and no OpenAPI document (MCP-WS-0)
    expected.update({case_id: "not-applicable" for case_id in ("HTTP-07", "MCP-01", "MCP-02", "MCP-03")})
    # no validation telemetry (PROTOCOL.md section 13: an extension): not offered
    expected.update({case_id: "not-applicable" for case_id in ("VAL-01", "VAL-02", "VAL-03")})
    expected["TASK-01"] = "not-applicable"  # no Task API
    expected["SEC-01"] = "not-applicable"  # no token given
    assert not_passed == expected
    assert report.passed


def test_unenforced_session_limit_is_flagged() -> None:
    with serve_in_thread(MinimalServer()) as url:
        report = run_checks_sync(CheckOptions(url, only=["WS-CAP-01"], timeout_s=2, max_sessions=2))
    result = report.result("WS-CAP-01")
    assert result.verdict.value == "fail" and "expected CAPACITY_REACHED" in (result.reason or "")


# flaw -> (case meant to flag it, text expected in the reason, cases run)
BROKEN = {
    "wrong_reply_type": (Flaws(wrong_reply_type=True), "WS-STEP-01", "expected an observation frame, got"),
    "missing_done": (Flaws(missing_done=True), "WS-RESET-01", "'done' is a required property"),
    "out_of_order": (Flaws(out_of_order=True), "WS-ORDER-01", "answer 1 of"),
    "shared_state": (Flaws(shared_state=True), "WS-CONN-02", "not isolated"),
    "crash_on_invalid_json": (Flaws(crash_on_invalid_json=True), "WS-ERR-01", "closed the connection"),
    "wrong_close_code": (Flaws(close_code=1011), "WS-CLOSE-01", "expected code 1000"),
    "binary_closes": (Flaws(binary_closes=True), "WS-ERR-07", "instead of answering a binary frame"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_server_is_flagged_by_its_case(name: str) -> None:
    flaws, case_id, reason = BROKEN[name]
    with serve_in_thread(MinimalServer(flaws)) as url:
        report = run_checks_sync(CheckOptions(url, timeout_s=10, frame_limit_mb=1))
    result = report.result(case_id)
    assert result.verdict.value == "fail", (case_id, result.verdict, result.reason)
    assert reason in (result.reason or "")
    assert result.evidence  # the wire log backs the verdict
    assert not report.passed


def test_missing_done_is_reported_with_pointer_and_keyword() -> None:
    with serve_in_thread(MinimalServer(Flaws(missing_done=True))) as url:
        report = run_checks_sync(CheckOptions(url, only=["WS-RESET-01", "SCHEMA-01"], timeout_s=10))
    faults = [f for e in report.result("WS-RESET-01").evidence for f in e.faults]
    assert faults and faults[0].pointer == "/data" and faults[0].keyword == "required"
    assert report.result("SCHEMA-01").verdict.value == "fail"


def test_hanging_server_times_out_per_case_and_the_run_ends() -> None:
    """A server that never answers `state`: one timeout verdict per case, then the run ends."""
    timeout = 1.0
    only = ["WS-CONN-01", "WS-STATE-01", "WS-RESET-01", "HTTP-01"]
    with serve_in_thread(MinimalServer(Flaws(ignore_state=True))) as url:
        started = time.monotonic()
        report = run_checks_sync(CheckOptions(url, only=only, timeout_s=timeout))
        elapsed = time.monotonic() - started
    verdicts = report.verdicts()
    assert verdicts == {"WS-CONN-01": "timeout", "WS-STATE-01": "timeout", "WS-RESET-01": "pass", "HTTP-01": "pass"}
    for case_id in ("WS-CONN-01", "WS-STATE-01"):
        result = report.result(case_id)
        assert timeout * 0.9 <= result.duration_s < timeout + 5
        assert "no answer to /ws#" in (result.reason or "") and '{"type":"state"}' in (result.reason or "")
    assert elapsed < 2 * timeout + 15
    assert not report.passed


def test_failure_survives_a_server_that_never_answers_close() -> None:
    """The case's own verdict wins over the closing handshake timing out afterwards."""
    with serve_stubborn() as url:
        report = run_checks_sync(CheckOptions(url, only=["WS-CONN-01", "WS-ERR-04"], timeout_s=10))
    assert report.verdicts() == {"WS-CONN-01": "fail", "WS-ERR-04": "fail"}
    assert "expected a state frame" in (report.result("WS-CONN-01").reason or "")
    assert report.result("WS-CONN-01").evidence[-1].faults[0].keyword in ("enum", "const", "if", "type")


def test_a_server_that_stops_answering_is_said_once_and_the_rest_is_not_run() -> None:
    """After its second session the server answers nothing, HTTP included: the case that got
    no answer says the server stopped (GET /health, bounded, got no answer either), the cases
    after it are not run, and SCHEMA-01 still judges the frames the run recorded."""
    only = ["WS-CONN-01", "WS-RESET-01", "WS-STEP-01", "WS-STATE-01", "HTTP-01", "HTTP-02", "SCHEMA-01"]
    with serve_in_thread(MinimalServer(Flaws(stops_answering_after=2))) as url:
        report = run_checks_sync(CheckOptions(url, only=only, timeout_s=2))
    assert report.verdicts() == {
        "WS-CONN-01": "pass",
        "WS-RESET-01": "pass",
        "WS-STEP-01": "timeout",
        "WS-STATE-01": "not-run",
        "HTTP-01": "not-run",
        "HTTP-02": "not-run",
        "SCHEMA-01": "pass",
    }
    stopped = report.result("WS-STEP-01")
    assert stopped.reason is not None
    assert stopped.reason.startswith(
        "the server stopped answering after WS-RESET-01: GET /health gave no answer within "
    )
    assert "no verdict within 2 s" in stopped.reason  # what the case itself was waiting for
    assert [e.preview for e in stopped.evidence if e.channel == "http"] == ["GET /health"]  # the probe, unanswered
    assert stopped.fails_run and not report.passed
    assert report.stopped is not None and report.stopped.case_id == "WS-STEP-01"
    for case_id in ("WS-STATE-01", "HTTP-01", "HTTP-02"):
        result = report.result(case_id)
        assert result.reason == "not run: the server stopped answering during WS-STEP-01"
        assert not result.evidence and not result.fails_run


def test_an_optional_case_the_server_stops_answering_in_fails_the_run() -> None:
    """The cases left unjudged are required ones: stopping is a failure even in an optional case."""
    only = ["WS-CONN-01", "WS-RESET-04", "HTTP-01"]
    with serve_in_thread(MinimalServer(Flaws(stops_answering_after=1))) as url:
        report = run_checks_sync(CheckOptions(url, only=only, timeout_s=2))
    assert report.verdicts() == {"WS-CONN-01": "pass", "WS-RESET-04": "timeout", "HTTP-01": "not-run"}
    assert report.result("WS-RESET-04").fails_run and not report.passed
