"""A broken example or an unresolvable `$ref` stops `docs` with one line naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_anyio.core import load_spec
from openenv_anyio.docs import BrokenExampleError, UnresolvableRefError, build_reference

from .conftest import RunDocs
from .spec_copy import edit_json, write_example


def assert_one_line_error(result: Any, *needles: str) -> None:
    assert result.code == 1
    assert result.out == ""
    assert result.err.endswith("\n") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in result.err, result.err


@pytest.mark.parametrize(
    ("name", "vector", "why"),
    [
        (
            "valid/docs-negative-seed.json",
            {
                "entry": "client-frame",
                "valid": True,
                "description": "d",
                "frame": {"type": "reset", "data": {"seed": -1}},
            },
            "/data/seed",
        ),
        (
            "invalid/docs-good-step.json",
            {"entry": "client-frame", "valid": False, "description": "d", "frame": {"type": "step", "data": {}}},
            "says otherwise",
        ),
        (
            "valid/docs-not-json.json",
            {"entry": "client-frame", "valid": True, "description": "d", "text": "{oops"},
            "Invalid JSON",
        ),
        (
            "invalid/docs-wrong-folder.json",
            {"entry": "client-frame", "valid": True, "description": "d", "frame": {"type": "close"}},
            "invalid/",
        ),
        (
            "valid/docs-no-entry.json",
            {"valid": True, "description": "d", "frame": {"type": "close"}},
            "entry",
        ),
        (
            "invalid/docs-unknown-code.json",
            {
                "entry": "client-frame",
                "valid": False,
                "description": "d",
                "frame": {"type": "x"},
                "expect_code": "NOPE",
            },
            "NOPE",
        ),
        (
            "valid/docs-both.json",
            {"entry": "client-frame", "valid": True, "description": "d", "frame": {"type": "close"}, "text": "{}"},
            "exactly one of",
        ),
    ],
)
def test_a_broken_example_stops_generation(
    name: str, vector: dict[str, Any], why: str, spec_copy: Path, tmp_path: Path, run_docs: RunDocs
) -> None:
    path = write_example(spec_copy, name, **vector)
    out = tmp_path / "out"

    result = run_docs("--spec-root", spec_copy, "--out", out)

    assert_one_line_error(result, str(path), why)
    assert not out.exists(), "nothing may be written when generation fails"
    with pytest.raises(BrokenExampleError, match=name):
        build_reference(load_spec(spec_copy))


def test_an_example_that_is_not_json_stops_generation(spec_copy: Path, run_docs: RunDocs) -> None:
    path = spec_copy / "v1" / "examples" / "valid" / "docs-garbled.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"entry": ', encoding="utf-8")
    assert_one_line_error(
        run_docs("--spec-root", spec_copy, "--out", spec_copy / "out"), str(path), "not a readable JSON"
    )


def _break_error_code_ref(document: dict[str, Any]) -> None:
    document["properties"]["data"]["properties"]["code"]["$ref"] = "../no-such-registry.json"


def _break_action_log_ref(document: dict[str, Any]) -> None:
    document["properties"]["episode_state"]["properties"]["action_logs"]["items"]["$ref"] = "#/$defs/missing"


def _break_dispatch_ref(document: dict[str, Any]) -> None:
    document["allOf"][0]["then"]["$ref"] = "frames/no-such-frame.json"


@pytest.mark.parametrize(
    ("relative", "edit", "needle"),
    [
        ("frames/error.json", _break_error_code_ref, "no-such-registry.json"),
        ("frames/state-update.json", _break_action_log_ref, "#/$defs/missing"),
        ("client-frame.json", _break_dispatch_ref, "no-such-frame.json"),
    ],
)
def test_an_unresolvable_ref_stops_generation(
    relative: str, edit: Any, needle: str, spec_copy: Path, tmp_path: Path, run_docs: RunDocs
) -> None:
    path = spec_copy / "v1" / relative
    edit_json(path, edit)

    result = run_docs("--spec-root", spec_copy, "--out", tmp_path / "out", "--format", "html")

    assert_one_line_error(result, str(path), "unresolvable $ref", needle)
    with pytest.raises(UnresolvableRefError, match=relative):
        build_reference(load_spec(spec_copy))


def test_an_unreadable_schema_stops_generation(spec_copy: Path, run_docs: RunDocs) -> None:
    path = spec_copy / "v1" / "frames" / "step.json"
    path.write_text("{", encoding="utf-8")
    assert_one_line_error(run_docs("--spec-root", spec_copy, "--check"), "step.json")
