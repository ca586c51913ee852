"""The validation benchmark runs and reports every method (no timing is asserted)."""

from __future__ import annotations

import pytest

from bench import validation


def test_validation_bench_reports_every_case_and_method(capsys: pytest.CaptureFixture[str]) -> None:
    rows = validation.run(quick=True)
    cases = {row["case"] for row in rows}
    methods = {row["method"] for row in rows}
    assert cases == {"step frame", "1 MB observation frame"}
    assert {"fast (entry point)", "reference (jsonschema)", "full decode (parse+validate)"} <= methods
    assert len(rows) == len(cases) * len(methods)
    for row in rows:
        assert row["us"] > 0 and row["ratio_to_jsonschema"] > 0
    big = next(row for row in rows if row["case"] == "1 MB observation frame")
    assert big["frame_bytes"] >= 1_000_000
    validation.print_table(rows)
    assert "target: step frame validation" in capsys.readouterr().out
