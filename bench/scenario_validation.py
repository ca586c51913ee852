"""Scenario 8: frame validation cost, from ``bench.validation`` when that module exists."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from bench.measure import Context
from bench.results import Measurement, Row


def scenario_validation(ctx: Context) -> list[Row]:
    """8. Frame validation cost, measured by ``bench.validation.run(quick)`` when present."""
    try:
        module = importlib.import_module("bench.validation")
    except ModuleNotFoundError as exc:
        if exc.name != "bench.validation":
            raise
        return [Row("8", "frame validation cost", "us", "", note="n/a: bench.validation not present")]
    return validation_rows(module.run(ctx.profile.quick))


def validation_rows(result: Any) -> list[Row]:
    """Rows from what ``bench.validation.run`` returns.

    Understood: a list of ``Row``; a list of mappings with ``case`` and ``method`` (one row
    per case, one measurement per method, numbers as metrics, the reference method as the
    baseline); a mapping of numbers; anything else is shown as a note.
    """
    if isinstance(result, list) and all(isinstance(r, Row) for r in result):
        return result
    if isinstance(result, list) and all(isinstance(r, Mapping) and "case" in r and "method" in r for r in result):
        rows: dict[str, Row] = {}
        for item in result:
            numbers = {
                str(k): float(v) for k, v in item.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            }
            row = rows.setdefault(
                str(item["case"]), Row("8", f"validation: {item['case']}", "us", "", higher_is_better=False)
            )
            row.measurements.append(Measurement(str(item["method"]), numbers, runs=1))
        for row in rows.values():
            row.baseline = next((m.variant for m in row.measurements if "reference" in m.variant), "")
        return list(rows.values())
    row = Row("8", "frame validation cost", "", "")
    if isinstance(result, Mapping):
        numbers = {str(k): float(v) for k, v in result.items() if isinstance(v, (int, float))}
        row.measurements.append(Measurement("validation", numbers, runs=1))
    else:
        row.note = str(result)[:500]
    return [row]
