"""Run conformance cases against a server: learn its schema, then each case under its own
timeout (a trio cancel scope), so a hanging server costs one timeout verdict per case and
the run always ends.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio

from ..client import proxy_url_for
from ..core import Validator
from .actions import UnsupportedSchema, invalid_variant, minimal_instance
from .cases import Case, select_cases
from .context import CaseContext, CheckOptions, Setup
from .driver import DriverError, HttpProbe, Target, check_reachable
from .evidence import Recorder, WireEvent
from .verdicts import CaseFailed, CaseResult, NotApplicable, Verdict

__all__ = ["CheckOptions", "RunReport", "run_checks", "run_checks_sync"]

@dataclass(slots=True)
class RunReport:
    """Everything a run produced: the setup it used and one result per case."""

    options: CheckOptions
    setup: Setup
    started_at: str
    duration_s: float = 0.0
    results: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no result fails the run (see :attr:`CaseResult.fails_run`)."""
        return not any(result.fails_run for result in self.results)

    def result(self, case_id: str) -> CaseResult:
        return next(r for r in self.results if r.case_id == case_id)

    def verdicts(self) -> dict[str, str]:
        return {r.case_id: r.verdict.value for r in self.results}


async def _learn_setup(options: CheckOptions, target: Target, http: HttpProbe) -> Setup:
    """Fetch ``/schema`` (when present) and derive a valid and an invalid action from it."""
    schema: Mapping[str, Any] | None = None
    schema_problem: str | None = None
    try:
        reply = await http.request("GET", "/schema")
    except DriverError as exc:
        reply, schema_problem = None, str(exc)
    if reply is not None:
        if reply.status == 200 and isinstance(reply.body, Mapping) and isinstance(reply.body.get("action"), Mapping):
            schema = reply.body
        else:
            schema_problem = f"the server has no usable GET /schema (HTTP {reply.status}); pass --action"
    action_schema = schema["action"] if schema else None
    validator: Validator | None = None
    if action_schema is not None:
        try:
            validator = Validator(action_schema)
        except ValueError as exc:
            schema_problem = f"the action schema does not compile: {exc}"
    action, source, problem = options.action, "option", None
    if action is None:
        source = "schema" if validator else "none"
        if validator is None:
            problem = schema_problem or "no action schema; pass --action"
        else:
            try:
                candidate = minimal_instance(action_schema)
            except UnsupportedSchema as exc:
                candidate, problem = None, f"cannot build an action from the schema ({exc}); pass --action"
            if candidate is not None and isinstance(candidate, dict) and validator.is_valid(candidate):
                action = candidate
            elif problem is None:
                problem = "the action built from the schema does not validate; pass --action"
    invalid = None
    if validator is not None and action is not None:
        candidate = invalid_variant(action_schema, action)
        if candidate is not None and not validator.is_valid(candidate):
            invalid = candidate
    return Setup(
        options=options,
        target=target,
        schema=schema,
        schema_problem=schema_problem,
        action=action,
        action_source=source if action is not None else "none",
        action_problem=problem,
        invalid_action=invalid,
    )


async def _run_case(case: Case, setup: Setup, recorder: Recorder, http: HttpProbe) -> CaseResult:
    recorder.case_id = case.id
    ctx = CaseContext(setup, recorder, http)
    verdict, reason = Verdict.PASS, None
    started = time.monotonic()
    with trio.move_on_after(setup.timeout_s) as scope:
        try:
            await case.run(ctx)
        except CaseFailed as exc:
            verdict, reason = Verdict.FAIL, str(exc)
        except NotApplicable as exc:
            verdict, reason = Verdict.NOT_APPLICABLE, str(exc)
        except DriverError as exc:
            verdict, reason = Verdict.FAIL, str(exc)
        except Exception as exc:  # a server reply the kit did not foresee must not end the run
            verdict, reason = Verdict.FAIL, f"unexpected error in the kit: {type(exc).__name__}: {exc}"
    evidence = recorder.for_case(case.id)
    unknown = _unknown_members(evidence)
    if unknown:
        text = f"members the spec does not name, ignored (COMPAT-1): {unknown}"
        ctx.note(text)
        if setup.options.strict:
            ctx.non_strict(f"{text} (--strict)")
    if scope.cancelled_caught:
        verdict, reason = Verdict.TIMEOUT, _timeout_reason(evidence, setup.timeout_s)
    if verdict is Verdict.PASS and ctx.non_strict_reasons:
        verdict, reason = Verdict.NON_STRICT, "; ".join(ctx.non_strict_reasons)
    elif verdict is Verdict.PASS and ctx.informational:
        verdict = Verdict.INFORMATIONAL
    return CaseResult(
        case_id=case.id,
        title=case.title,
        requirements=case.requirements,
        required=case.required,
        verdict=verdict,
        reason=reason,
        notes=ctx.notes,
        duration_s=time.monotonic() - started,
        evidence=evidence,
    )


def _unknown_members(evidence: list[WireEvent]) -> str:
    """``observation /data/metadata, ...``: each frame type and pointer once, in wire order."""
    seen: dict[str, None] = {}
    for event in evidence:
        if event.unknown_members:
            kind = _frame_type(event.preview)
            for pointer in event.unknown_members:
                seen.setdefault(f"{kind} {pointer}".strip(), None)
    return ", ".join(seen)


def _frame_type(preview: str) -> str:
    found = re.search(r'"type"\s*:\s*"([^"]{1,40})"', preview)
    return found.group(1) if found else ""


def _timeout_reason(evidence: list[WireEvent], timeout_s: float) -> str:
    """Say what the case was waiting for when its time ran out."""
    last = evidence[-1] if evidence else None
    waiting = f": no answer to {last.channel}#{last.connection} {last.preview}" if last and last.direction == "sent" else ""
    return f"no verdict within {timeout_s:g} s (per-case timeout){waiting}"


async def run_checks(options: CheckOptions) -> RunReport:
    """Run the selected cases against ``options.url`` (trio).

    Raises ``ValueError`` for a bad URL or case selection and :class:`DriverError` when the
    server cannot be reached at all; everything else becomes a verdict.
    """
    target = Target.from_url(options.url, token=options.token)
    cases = select_cases(list(options.only) if options.only else None)
    await check_reachable(target, options.timeout_s)
    recorder = Recorder()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    # the client's proxy rule (loopback never through a proxy); WebSockets go direct
    proxy = proxy_url_for(options.url, os.environ)
    async with httpx.AsyncClient(timeout=options.timeout_s, proxy=proxy, trust_env=False) as client:
        http = HttpProbe(client, target, recorder)
        setup = Setup(options, target, schema_problem="GET /schema did not answer in time")
        with trio.move_on_after(options.timeout_s):
            setup = await _learn_setup(options, target, http)
        report = RunReport(options=options, setup=setup, started_at=started_at)
        for case in cases:
            report.results.append(await _run_case(case, setup, recorder, http))
    report.duration_s = time.monotonic() - started
    return report


def run_checks_sync(options: CheckOptions) -> RunReport:
    """:func:`run_checks` from synchronous code (starts its own trio event loop)."""
    return trio.run(run_checks, options)
