"""The expected-failures baseline: case IDs a server is known to fail.

File format: one case ID per line; ``#`` starts a comment (say why the case fails).
A listed case that fails (or times out) does not fail the run; a listed case that now
passes DOES fail the run, so the baseline only ever shrinks (as in the MCP conformance
suite). A listed ID that is not a case is an error: typos must not hide failures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .verdicts import CaseResult

__all__ = ["BaselineError", "apply_baseline", "load_baseline", "parse_baseline"]


class BaselineError(ValueError):
    """The baseline file cannot be read or names an unknown case."""


def parse_baseline(text: str, known_ids: Iterable[str]) -> dict[str, str]:
    """Case ID -> comment, from the text of a baseline file."""
    known = set(known_ids)
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        content, _, comment = line.partition("#")
        content = content.strip()
        if not content:
            continue
        case_id = content.split()[0].upper()
        if case_id not in known:
            raise BaselineError(f"line {number}: {case_id!r} is not a case ID")
        entries[case_id] = comment.strip()
    return entries


def load_baseline(path: str | Path, known_ids: Iterable[str]) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return parse_baseline(text, known_ids)
    except BaselineError as exc:
        raise BaselineError(f"{path}: {exc}") from None


def apply_baseline(results: Iterable[CaseResult], baseline: Mapping[str, str]) -> None:
    """Mark results listed in ``baseline``: expected failures, or passes that should not be."""
    for result in results:
        if result.case_id not in baseline:
            continue
        if result.verdict.is_failure:
            result.baseline = "expected-failure"
        elif result.verdict.is_success:
            result.baseline = "unexpected-pass"
