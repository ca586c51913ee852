"""COMPAT-5: members the spec does not name, in frames a server may extend, are notes on the
case (not failures); ``--strict`` makes such a case non-strict. (WS-CONN-02 on one-session
servers: ``test_field_envs.py`` on ours, ``tests/interop/test_kit.py`` on upstream's.)"""

from __future__ import annotations

from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync

from .minimal_server import Flaws, MinimalServer, serve_in_thread

CASES = ["WS-RESET-01", "WS-STEP-01"]


def test_unknown_members_are_notes_and_strict_makes_them_non_strict() -> None:
    with serve_in_thread(MinimalServer(Flaws(future_member=True))) as url:
        lenient = run_checks_sync(CheckOptions(url, only=CASES, timeout_s=10))
        strict = run_checks_sync(CheckOptions(url, only=CASES, timeout_s=10, strict=True))
    for case_id in CASES:
        result = lenient.result(case_id)
        assert result.verdict.value == "pass", result.reason
        assert any("observation /data/later" in note and "COMPAT-1" in note for note in result.notes), result.notes
        assert strict.result(case_id).verdict.value == "non-strict"
        assert "--strict" in (strict.result(case_id).reason or "")
    assert lenient.passed and strict.passed


def test_a_correct_server_gets_no_unknown_member_note(minimal_url: str) -> None:
    report = run_checks_sync(CheckOptions(minimal_url, only=CASES, timeout_s=10, strict=True))
    assert all(result.verdict.value == "pass" for result in report.results)
    assert not any("COMPAT-1" in note for result in report.results for note in result.notes)
