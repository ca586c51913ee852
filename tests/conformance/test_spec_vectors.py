"""SPEC-VEC-01: the spec's invalid client-frame vectors are sent as they are, and each must be
answered with its ``expect_code`` while the session carries on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync
from openenv_anyio.conformance.vectors import client_error_vectors

VECTORS: dict[str, dict[str, Any]] = {
    "client-invalid-json-text": {"requirement": "WS-ERR-1", "text": "not json", "expect_code": "INVALID_JSON"},
    "client-non-object-array": {"requirement": "WS-ERR-2", "frame": [1, 2], "expect_code": "VALIDATION_ERROR"},
    "client-unknown-type": {"requirement": "WS-ERR-3", "frame": {"type": "bogus"}, "expect_code": "UNKNOWN_TYPE"},
    "client-reset-negative-seed": {
        "requirement": "WS-RESET-2",
        "frame": {"type": "reset", "data": {"seed": -1}},
        "expect_code": "VALIDATION_ERROR",
    },
    "client-step-without-data": {
        "requirement": "WS-ERR-4",
        "frame": {"type": "step"},
        "expect_code": "VALIDATION_ERROR",
    },
}


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    (tmp_path / "invalid").mkdir()
    (tmp_path / "valid").mkdir()
    for name, fields in VECTORS.items():
        doc = {"entry": "client-frame", "valid": False, "description": name, "source": "spec", **fields}
        (tmp_path / "invalid" / f"{name}.json").write_text(json.dumps(doc))
    server_side = {"entry": "server-frame", "valid": False, "requirement": "WS-OBS-1", "frame": {"type": "observation"}}
    (tmp_path / "invalid" / "server-observation-without-data.json").write_text(json.dumps(server_side))
    return tmp_path


def test_only_client_vectors_with_an_expected_code_are_used(examples: Path) -> None:
    vectors = client_error_vectors(examples)
    assert [v.name for v in vectors] == sorted(VECTORS)
    assert next(v for v in vectors if v.name == "client-non-object-array").text == "[1, 2]"


def test_correct_server_answers_every_vector(minimal_url: str, examples: Path) -> None:
    report = run_checks_sync(CheckOptions(minimal_url, only=["SPEC-VEC-01"], examples_dir=examples))
    result = report.result("SPEC-VEC-01")
    assert result.verdict.value == "pass", result.reason
    assert result.notes == [f"5 vector(s) sent from {examples}"]


def test_openenv_core_mishandles_the_vectors_of_its_defects(openenv_core_url: str, examples: Path) -> None:
    report = run_checks_sync(CheckOptions(openenv_core_url, only=["SPEC-VEC-01"], examples_dir=examples))
    result = report.result("SPEC-VEC-01")
    assert result.verdict.value == "fail" and not result.required
    reason = result.reason or ""
    assert reason.startswith("2 of 5 vector(s) mishandled")
    assert "client-non-object-array [WS-ERR-2]: expected code VALIDATION_ERROR, got SESSION_ERROR" in reason
    assert "client-reset-negative-seed [WS-RESET-2]" in reason
    # after the server closed the session, the next vectors ran on a new connection
    assert len({e.connection for e in result.evidence if e.channel == "/ws"}) == 2


def test_no_vectors_is_not_applicable(minimal_url: str, tmp_path: Path) -> None:
    report = run_checks_sync(CheckOptions(minimal_url, only=["SPEC-VEC-01"], examples_dir=tmp_path))
    assert report.result("SPEC-VEC-01").verdict.value == "not-applicable"
