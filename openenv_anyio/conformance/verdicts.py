"""Verdicts of conformance cases, the result of one case, and how a case signals its verdict.

A case coroutine returns normally to pass, raises :class:`CaseFailed` to fail or
:class:`NotApplicable` when the server lacks what the case needs; it may also mark itself
non-strict or informational through its context (see ``cases.CaseContext``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .evidence import WireEvent

__all__ = ["CaseFailed", "CaseResult", "NotApplicable", "Verdict"]


class Verdict(enum.StrEnum):
    """What a case concluded (after Autobahn|Testsuite's OK / NON-STRICT / FAILED / INFORMATIONAL)."""

    PASS = "pass"
    NON_STRICT = "non-strict"  # works, but breaks a SHOULD or a documented openenv-core difference
    FAIL = "fail"
    TIMEOUT = "timeout"  # the case did not finish in time: a failure
    NOT_APPLICABLE = "not-applicable"
    INFORMATIONAL = "informational"
    NOT_RUN = "not-run"  # the server had stopped answering before the case's turn: no verdict

    @property
    def is_failure(self) -> bool:
        return self in (Verdict.FAIL, Verdict.TIMEOUT)

    @property
    def is_success(self) -> bool:
        return self in (Verdict.PASS, Verdict.NON_STRICT, Verdict.INFORMATIONAL)


class CaseFailed(Exception):
    """Raised by a case: the server broke the requirement; the message says how."""


class NotApplicable(Exception):
    """Raised by a case: the server lacks what the case tests; the message says why."""


@dataclass(slots=True)
class CaseResult:
    """One case's verdict with its reason, notes and wire evidence."""

    case_id: str
    title: str
    requirements: tuple[str, ...]
    required: bool
    verdict: Verdict
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    evidence: list[WireEvent] = field(default_factory=list)
    #: None, "expected-failure" (listed in the baseline and failed) or "unexpected-pass"
    baseline: str | None = None
    #: the server stopped answering during this case: the cases after it were not run
    ended_run: bool = False

    @property
    def fails_run(self) -> bool:
        """True when this result alone makes the run fail (a server that stopped answering
        fails the run in whichever case it stopped: the required cases after it went unjudged)."""
        if self.baseline == "unexpected-pass":
            return True
        counts = self.required or self.ended_run
        return counts and self.verdict.is_failure and self.baseline != "expected-failure"
