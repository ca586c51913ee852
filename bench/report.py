"""Printing rows as a table, and writing them as JSON."""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from bench.results import Row

#: metric -> (column header, format)
_FORMATS: dict[str, str] = {
    "steps_per_s": "{:,.0f} steps/s",
    "mb_per_s": "{:,.0f} MB/s",
    "p50_ms": "p50 {:.2f} ms",
    "p99_ms": "p99 {:.2f} ms",
    "kb_per_session": "{:,.1f} kB/session",
    "rss_before_mb": "RSS {:.0f}",
    "rss_after_mb": "-> {:.0f} MB",
    "threads": "{:.0f} threads",
    "wall_s": "wall {:.1f} s",
    "success_pct": "ok {:.1f} %",
    "p50_s": "p50 {:.2f} s",
    "p99_s": "p99 {:.2f} s",
    "rss_peak_mb": "RSS peak {:.0f} MB",
    "threads_peak": "{:.0f} threads",
    "us": "{:,.3f} us/call",
    "stall_s": "longest step {:.3f} s",
    "rss_multiple": "RSS +{:.2f} x frame",
    "answered_s": "answered in {:.2f} s",
    "refused": "{:.0f} refused",
    "frame_bytes": "{:,.0f} B",
}
_HIDDEN = {"sessions_held", "ratio_to_jsonschema"}  # in the JSON; the ratio column says it


def _format_metrics(primary: str, metrics: dict[str, float]) -> str:
    keys = [primary] + [k for k in metrics if k != primary and k not in _HIDDEN]
    parts = []
    for key in keys:
        value = metrics.get(key, math.nan)
        if isinstance(value, float) and math.isnan(value):
            continue
        parts.append(_FORMATS.get(key, key + " {:.4g}").format(value))
    return "  ".join(parts)


def print_table(rows: Iterable[Row], out: TextIO) -> None:
    """One block per row: a variant per line, the ratio to the row's baseline in its own column."""
    width = 28
    for row in rows:
        direction = "" if row.higher_is_better else ", lower is better"
        against = f"ratio vs {row.baseline}{direction}" if row.baseline else ""
        print(f"\n[{row.scenario}] {row.case}   ({against})" if against else f"\n[{row.scenario}] {row.case}", file=out)
        if row.note:
            print(f"    {row.note}", file=out)
        for m in row.measurements:
            if not m.ok:
                print(f"    {m.variant:<{width}} n/a: {m.unavailable or 'no run'}", file=out)
                continue
            ratio = row.ratio(m.variant) if row.baseline and m.variant != row.baseline else math.nan
            if math.isnan(ratio):
                ratio_text = "  base  " if m.variant == row.baseline else "        "
            else:
                ratio_text = f"{ratio:7.2f}x" if ratio >= 0.1 else f"{ratio:7.4f}x"
            errors = f"  errors {m.errors}: {m.note}" if m.errors else (f"  ({m.note})" if m.note else "")
            print(f"    {m.variant:<{width}} {ratio_text}  {_format_metrics(row.primary, m.metrics)}{errors}", file=out)


def write_json(rows: Iterable[Row], path: Path, *, settings: dict[str, Any]) -> None:
    data = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": _cpus()},
        "settings": settings,
        "rows": [row.to_json() for row in rows],
    }
    path.write_text(json.dumps(data, indent=2) + "\n")


def save_figures(path: Path | None, figures: Any) -> None:
    """Write a tool's figures as JSON to ``path`` (its folder made), if a path was given."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(figures, indent=2) + "\n")


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))
