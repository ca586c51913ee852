"""Reports of a conformance run: a terminal table, JSON and JUnit XML.

JSON report (``--json FILE``), described exactly by :data:`REPORT_SCHEMA` (tests validate
real reports against it)::

    {"format": "openenv-anyio-conformance", "format_version": 2,
     "tool": {"name": "openenv-anyio", "version": "0.1.0"}, "spec_version": "v1",
     "target": "http://127.0.0.1:8000", "started_at": "2026-01-01T00:00:00+00:00",
     "duration_s": 1.2, "passed": true,
     "stopped": null | {"case": "WS-CONN-02", "after": "WS-ERR-03" | null,
                        "probe": "GET /health gave no answer within 5 s"},
     "setup": {"action": {...} | null, "action_source": "option" | "schema" | "none",
               "action_problem": str | null, "invalid_action": {...} | null,
               "timeout_s": 10.0, "frame_limit_mb": 16 | null, "max_sessions": 8 | null},
     "summary": {"total": 28, "pass": 20, "non-strict": 1, "fail": 2, "timeout": 0,
                 "not-applicable": 2, "informational": 1, "not-run": 0,
                 "expected-failures": 2, "unexpected-passes": 0},
     "cases": [{"id": "WS-ERR-02", "title": "...", "requirements": ["WS-ERR-2"],
                "required": true, "verdict": "fail", "reason": str | null,
                "notes": [str], "duration_s": 0.01,
                "baseline": null | "expected-failure" | "unexpected-pass",
                "fails_run": false,
                "evidence": [{"t": 0.5, "channel": "/ws", "connection": 3,
                              "direction": "sent" | "received" | "closed",
                              "kind": "open" | "text" | "binary" | "close" | "request" | "response",
                              "length": int | null, "preview": str,
                              "close_code": int | null, "close_reason": str | null,
                              "faults": [{"pointer": "/data/done", "keyword": "required",
                                          "message": str}]}]}]}

``stopped`` is set when the server stopped answering during the run: ``case`` timed out and
the liveness probe that followed (``probe``) got no answer either; the cases after it that
need the server have the verdict ``not-run`` (format version 2 added both).

JUnit XML (``--junit FILE``): one ``testcase`` per case (``classname`` is the case group,
``name`` the ID and title); a ``failure`` exactly when the case fails the run, ``skipped``
for not-applicable and not-run cases and baselined failures, the wire log in ``system-out``.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from typing import IO, Any

from ..core import SPEC_VERSION
from .runner import RunReport
from .verdicts import CaseResult, Verdict

__all__ = ["REPORT_SCHEMA", "render_terminal", "to_json", "to_junit_xml", "use_colour"]

_NULLABLE_STR = {"type": ["string", "null"]}
_EVENT = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "t",
        "channel",
        "connection",
        "direction",
        "kind",
        "length",
        "preview",
        "close_code",
        "close_reason",
        "faults",
    ],
    "properties": {
        "t": {"type": "number", "minimum": 0},
        "channel": {"enum": ["/ws", "/ws/ui", "http"]},
        "connection": {"type": "integer", "minimum": 0},
        "direction": {"enum": ["sent", "received", "closed"]},
        "kind": {"enum": ["open", "text", "binary", "close", "request", "response"]},
        "length": {"type": ["integer", "null"], "minimum": 0},
        "preview": {"type": "string"},
        "close_code": {"type": ["integer", "null"]},
        "close_reason": _NULLABLE_STR,
        "faults": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["pointer", "keyword", "message"],
                "properties": {
                    "pointer": {"type": "string"},
                    "keyword": {"type": "string"},
                    "message": {"type": "string"},
                },
            },
        },
    },
}
_COUNT = {"type": "integer", "minimum": 0}
_VERDICTS = [v.value for v in Verdict]

#: JSON Schema (2020-12) of the JSON report
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "openenv-anyio conformance report",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "format",
        "format_version",
        "tool",
        "spec_version",
        "target",
        "started_at",
        "duration_s",
        "passed",
        "stopped",
        "setup",
        "summary",
        "cases",
    ],
    "properties": {
        "format": {"const": "openenv-anyio-conformance"},
        "format_version": {"const": 2},
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "spec_version": {"type": "string"},
        "target": {"type": "string"},
        "started_at": {"type": "string"},
        "duration_s": {"type": "number", "minimum": 0},
        "passed": {"type": "boolean"},
        "stopped": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["case", "after", "probe"],
                    "properties": {"case": {"type": "string"}, "after": _NULLABLE_STR, "probe": {"type": "string"}},
                },
            ]
        },
        "setup": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "action",
                "action_source",
                "action_problem",
                "invalid_action",
                "timeout_s",
                "frame_limit_mb",
                "max_sessions",
            ],
            "properties": {
                "action": {"type": ["object", "null"]},
                "action_source": {"enum": ["option", "schema", "none"]},
                "action_problem": _NULLABLE_STR,
                "invalid_action": {"type": ["object", "null"]},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0},
                "frame_limit_mb": {"type": ["number", "null"]},
                "max_sessions": {"type": ["integer", "null"], "minimum": 1},
            },
        },
        "summary": {
            "type": "object",
            "additionalProperties": False,
            "required": ["total", *_VERDICTS, "expected-failures", "unexpected-passes"],
            "properties": {name: _COUNT for name in ["total", *_VERDICTS, "expected-failures", "unexpected-passes"]},
        },
        "cases": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "id",
                    "title",
                    "requirements",
                    "required",
                    "verdict",
                    "reason",
                    "notes",
                    "duration_s",
                    "baseline",
                    "fails_run",
                    "evidence",
                ],
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Z]+(-[A-Z]+)*-[0-9]{2}$"},
                    "title": {"type": "string"},
                    "requirements": {"type": "array", "items": {"type": "string"}},
                    "required": {"type": "boolean"},
                    "verdict": {"enum": _VERDICTS},
                    "reason": _NULLABLE_STR,
                    "notes": {"type": "array", "items": {"type": "string"}},
                    "duration_s": {"type": "number", "minimum": 0},
                    "baseline": {"enum": [None, "expected-failure", "unexpected-pass"]},
                    "fails_run": {"type": "boolean"},
                    "evidence": {"type": "array", "items": _EVENT},
                },
            },
        },
    },
}


def _tool_version() -> str:
    from .. import __version__

    return str(__version__)


def summary_counts(report: RunReport) -> dict[str, int]:
    counts = Counter(r.verdict.value for r in report.results)
    summary = {"total": len(report.results), **{v.value: counts.get(v.value, 0) for v in Verdict}}
    summary["expected-failures"] = sum(r.baseline == "expected-failure" for r in report.results)
    summary["unexpected-passes"] = sum(r.baseline == "unexpected-pass" for r in report.results)
    return summary


def _case_dict(result: CaseResult) -> dict[str, Any]:
    return {
        "id": result.case_id,
        "title": result.title,
        "requirements": list(result.requirements),
        "required": result.required,
        "verdict": result.verdict.value,
        "reason": result.reason,
        "notes": list(result.notes),
        "duration_s": round(result.duration_s, 6),
        "baseline": result.baseline,
        "fails_run": result.fails_run,
        "evidence": [event.as_dict() for event in result.evidence],
    }


def to_json(report: RunReport) -> dict[str, Any]:
    """The JSON report (a value matching :data:`REPORT_SCHEMA`)."""
    setup = report.setup
    return {
        "format": "openenv-anyio-conformance",
        "format_version": 2,
        "tool": {"name": "openenv-anyio", "version": _tool_version()},
        "spec_version": SPEC_VERSION,
        "target": setup.target.http_base,
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 6),
        "passed": report.passed,
        "stopped": None
        if report.stopped is None
        else {
            "case": report.stopped.case_id,
            "after": report.stopped.after,
            "probe": report.stopped.probe,
        },
        "setup": {
            "action": None if setup.action is None else dict(setup.action),
            "action_source": setup.action_source,
            "action_problem": setup.action_problem,
            "invalid_action": None if setup.invalid_action is None else dict(setup.invalid_action),
            "timeout_s": setup.timeout_s,
            "frame_limit_mb": report.options.frame_limit_mb,
            "max_sessions": report.options.max_sessions,
        },
        "summary": summary_counts(report),
        "cases": [_case_dict(result) for result in report.results],
    }


def _evidence_text(result: CaseResult) -> str:
    return "\n".join(str(event) for event in result.evidence)


#: verdicts reported as skipped test cases (no verdict on the server's behaviour)
_SKIPPED = (Verdict.NOT_APPLICABLE, Verdict.NOT_RUN)


def to_junit_xml(report: RunReport) -> str:
    """JUnit XML for CI systems: a failure exactly where the run fails."""
    counts = summary_counts(report)
    suite = ET.Element(
        "testsuite",
        name="openenv-anyio conformance",
        tests=str(counts["total"]),
        failures=str(sum(r.fails_run for r in report.results)),
        errors="0",
        skipped=str(sum(r.verdict in _SKIPPED or r.baseline == "expected-failure" for r in report.results)),
        time=f"{report.duration_s:.3f}",
        timestamp=report.started_at,
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="target", value=report.setup.target.http_base)
    ET.SubElement(properties, "property", name="spec_version", value=SPEC_VERSION)
    for result in report.results:
        testcase = ET.SubElement(
            suite,
            "testcase",
            classname=f"conformance.{result.case_id.rsplit('-', 1)[0]}",
            name=f"{result.case_id} {result.title}",
            time=f"{result.duration_s:.3f}",
        )
        message = f"{result.verdict.value}: {result.reason or ''}".strip(": ")
        if result.fails_run:
            if result.baseline == "unexpected-pass":
                message = "listed in the expected failures but now passes: remove it from the baseline"
            failure = ET.SubElement(testcase, "failure", message=message, type=result.verdict.value)
            failure.text = _evidence_text(result)
        elif result.verdict in _SKIPPED:
            ET.SubElement(testcase, "skipped", message=result.reason or result.verdict.value)
        elif result.baseline == "expected-failure":
            ET.SubElement(testcase, "skipped", message=f"expected failure (baseline): {result.reason}")
        out = [
            f"verdict: {result.verdict.value}" + ("" if result.required else " (optional)"),
            f"requirements: {', '.join(result.requirements)}",
        ]
        if result.reason:
            out.append(f"reason: {result.reason}")
        out += [f"note: {note}" for note in result.notes]
        out.append(_evidence_text(result))
        ET.SubElement(testcase, "system-out").text = "\n".join(out)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_COLOURS = {
    Verdict.PASS: "32",
    Verdict.NON_STRICT: "33",
    Verdict.FAIL: "31",
    Verdict.TIMEOUT: "31",
    Verdict.NOT_APPLICABLE: "2",
    Verdict.INFORMATIONAL: "36",
    Verdict.NOT_RUN: "2",
}
_EVIDENCE_LINES = 8


def use_colour(stream: IO[str]) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set."""
    return hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")


def render_terminal(report: RunReport, *, colour: bool = False, evidence: bool = True) -> str:
    """A table (ID, verdict, required, title, requirements), failure details, a summary line."""

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if colour else text

    lines = [f"openenv-anyio conformance ({SPEC_VERSION}) against {report.setup.target.http_base}"]
    if report.setup.action_problem and report.setup.action is None:
        lines.append(f"  no valid action: {report.setup.action_problem}")
    width = max((len(r.case_id) for r in report.results), default=8)
    for result in report.results:
        label = result.verdict.value.upper()
        if result.baseline:
            label += f" ({result.baseline})"
        kind = "required" if result.required else "optional"
        lines.append(
            f"{result.case_id:<{width}}  {paint(f'{label:<14}', _COLOURS[result.verdict])}  "
            f"{kind:<8}  {result.title}  [{', '.join(result.requirements)}]"
        )
        if (
            result.reason
            and result.verdict is not Verdict.PASS
            and not (report.stopped and result.verdict is Verdict.NOT_RUN)
        ):
            lines.append(f"{'':<{width}}    {result.reason}")
        for note in result.notes:
            lines.append(f"{'':<{width}}    note: {note}")
        if evidence and result.verdict.is_failure and result.evidence:
            shown = result.evidence[-_EVIDENCE_LINES:]
            if len(result.evidence) > len(shown):
                lines.append(f"{'':<{width}}    ... {len(result.evidence) - len(shown)} earlier event(s)")
            lines += [f"{'':<{width}}    {line}" for event in shown for line in str(event).splitlines()]
    counts = summary_counts(report)
    if report.stopped is not None:  # said once, not on each case it left unrun
        lines.append(
            f"{report.stopped.describe()} (found in {report.stopped.case_id}); "
            f"{counts[Verdict.NOT_RUN.value]} later case(s) not run"
        )
    parts = [f"{counts[v.value]} {v.value}" for v in Verdict if counts[v.value]]
    if counts["expected-failures"]:
        parts.append(f"{counts['expected-failures']} expected failure(s)")
    if counts["unexpected-passes"]:
        parts.append(f"{counts['unexpected-passes']} unexpected pass(es)")
    outcome = paint("PASSED", "32;1") if report.passed else paint("FAILED", "31;1")
    if len(report.results) < report.selected:
        outcome = paint(f"INTERRUPTED after {len(report.results)} of {report.selected} cases", "33;1")
    lines.append(f"{counts['total']} cases: {', '.join(parts)} in {report.duration_s:.2f} s -- {outcome}")
    return "\n".join(lines)


def write_json(report: RunReport, path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(to_json(report), handle, indent=2)
        handle.write("\n")


def write_junit(report: RunReport, path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(to_junit_xml(report))


def print_terminal(report: RunReport, stream: IO[str] | None = None) -> None:
    stream = stream or sys.stdout
    print(render_terminal(report, colour=use_colour(stream)), file=stream)
