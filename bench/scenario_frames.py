"""Scenario 11: what valid frames of tens of MiB cost the other sessions (``bench.big_frames``)."""

from __future__ import annotations

import dataclasses
import statistics

from bench.big_frames import RunFigures, Variant, measure
from bench.measure import Context
from bench.results import Measurement, Row

#: four small sessions step while the big frames are taken
SESSIONS = 4


def _medians(runs: list[RunFigures]) -> dict[str, float]:
    """Each figure's median over ``runs`` (but the quiet window's: the baseline row has it)."""
    return {
        name: statistics.median(getattr(run, name) for run in runs)
        for name in (field.name for field in dataclasses.fields(RunFigures))
        if name != "quiet_s"
    }


def scenario_frames(ctx: Context) -> list[Row]:
    """11. One and four valid big frames at once (90 MiB; quick: 30 MiB) while 4 sessions step,
    and four ``POST /reset`` bodies of that size: the longest step of those sessions, and the
    server's peak RSS over one frame's size."""
    mib = 30.0 if ctx.profile.quick else 90.0
    repeats = 1 if ctx.profile.quick else 3
    results = measure([Variant("ours", None)], [1, 4], mib, "ascii", SESSIONS, repeats, log=ctx.log)
    bodies = measure([Variant("ours", None)], [4], mib, "ascii", SESSIONS, repeats, log=ctx.log, via="http")
    row = Row(
        "11",
        f"{mib:g} MiB frames while {SESSIONS} sessions step: longest step",
        "stall_s",
        "no frame",
        higher_is_better=False,
        note="rss_multiple: peak RSS growth / one frame's size",
    )
    quiet = [run for runs in results.runs.values() for run in runs]
    row.measurements.append(
        Measurement("no frame", {"stall_s": statistics.median(run.quiet_s for run in quiet)}, len(quiet))
    )
    for (_, frames), runs in sorted(results.runs.items(), key=lambda item: item[0][1]):
        row.measurements.append(Measurement(f"{frames} frame{'s' if frames > 1 else ''}", _medians(runs), len(runs)))
    for (_, count), runs in bodies.runs.items():
        row.measurements.append(Measurement(f"{count} HTTP bodies", _medians(runs), len(runs)))
    return [row]
