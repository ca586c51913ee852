"""Live progress and the closing summary table of the demo (plain text, no dependencies)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TextIO

from .agents import AgentTally

__all__ = ["ProgressLine", "summary_table"]

_BAR_WIDTH = 30


class ProgressLine:
    """One status line redrawn in place on a terminal, or printed now and then elsewhere."""

    def __init__(self, tallies: Sequence[AgentTally], episodes_each: int, stream: TextIO) -> None:
        self._tallies = tallies
        self._total = episodes_each * len(tallies)
        self._stream = stream
        self._interactive = stream.isatty()
        self._last_done = -1

    def render(self) -> str:
        done = sum(t.episodes for t in self._tallies)
        steps = sum(t.steps for t in self._tallies)
        seconds = max((t.seconds for t in self._tallies), default=0.0)
        rate = steps / seconds if seconds > 0 else 0.0
        filled = int(_BAR_WIDTH * done / self._total) if self._total else _BAR_WIDTH
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        errors = sum(len(t.errors) for t in self._tallies)
        per_agent = " ".join(f"{t.episodes}" for t in self._tallies)
        return (
            f"[{bar}] {done}/{self._total} episodes  {steps:,} steps  {rate:,.0f} steps/s"
            f"  errors {errors}  per agent: {per_agent}"
        )

    def update(self, *, final: bool = False) -> None:
        """Redraw (terminal) or print when an episode finished (log)."""
        line = self.render()
        if self._interactive:
            self._stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
        else:
            done = sum(t.episodes for t in self._tallies)
            if done == self._last_done:
                return
            self._last_done = done
            self._stream.write(line + "\n")
        self._stream.flush()


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.1f}"


def summary_table(tallies: Sequence[AgentTally], wall_seconds: float, heading: str | None = None) -> str:
    """The closing table: ``heading`` (what ran), one row per agent and a total row, then
    the first error of each agent that had any (why it failed)."""
    header = ("agent", "episodes", "mean return", "best return", "steps", "steps/s", "errors")
    rows = []
    for t in tallies:
        rate = t.steps / t.seconds if t.seconds > 0 else 0.0
        rows.append(
            (
                str(t.agent),
                str(t.episodes),
                _fmt(t.mean_return),
                _fmt(t.best_return),
                f"{t.steps:,}",
                f"{rate:,.0f}",
                str(len(t.errors)),
            )
        )
    all_returns = [r for t in tallies for r in t.returns]
    steps = sum(t.steps for t in tallies)
    rows.append(
        (
            "all",
            str(len(all_returns)),
            _fmt(sum(all_returns) / len(all_returns) if all_returns else math.nan),
            _fmt(max(all_returns) if all_returns else math.nan),
            f"{steps:,}",
            f"{steps / wall_seconds if wall_seconds > 0 else 0:,.0f}",
            str(sum(len(t.errors) for t in tallies)),
        )
    )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.rjust(width) for cell, width in zip(cells, widths))

    rule = "  ".join("-" * w for w in widths)
    body = [line(header), rule, *(line(r) for r in rows[:-1]), rule, line(rows[-1])]
    if heading:
        body.insert(0, heading)
    for t in tallies:
        if t.errors:
            first = " ".join(str(t.errors[0]).split())  # one line, even for a page of HTML
            shown = first if len(first) <= 300 else first[:299] + "…"
            body.append(f"agent {t.agent}: {len(t.errors)} error(s), the first: {shown}")
    refused = [t for t in tallies if t.turned_away]
    if refused:  # the server admits fewer sessions at a time than there are agents
        admitted = max(1, len(tallies) - len(refused))
        body.append(
            f"the server admitted {admitted} of {len(tallies)} concurrent sessions: "
            f"run with --agents {admitted} (or raise the server's session limit)"
        )
    return "\n".join(body)
