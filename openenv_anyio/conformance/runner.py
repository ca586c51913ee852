"""Run conformance cases against a server: learn its schema, then each case under its own
timeout (a trio cancel scope), so a hanging server costs one timeout verdict per case and
the run always ends.

A case that times out may mean the server is slow at that one thing, or that it stopped
answering altogether. The runner tells them apart with a liveness probe, ``GET /health`` under
a short cancel scope (any HTTP status is an answer): a server that still answers keeps the
per-case behaviour; one that does not is said to have stopped answering, once, in the verdict
of the case where it was found (:class:`ServerStopped`), and every later case that needs the
server gets ``not-run`` instead of its own timeout. Cases that only judge what the run
recorded (``SCHEMA-01``) still run.
"""

from __future__ import annotations

import datetime
import functools
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio

from ..client import proxy_url_for
from ..core import Validator
from .actions import UnsupportedSchema, invalid_variant, minimal_instance
from .cases import Case, select_cases
from .context import CaseContext, CheckOptions, Setup
from .driver import DriverError, HandshakeRejected, HttpProbe, Target, check_reachable, open_ws
from .evidence import Recorder, WireEvent
from .verdicts import CaseFailed, CaseResult, NotApplicable, Verdict

__all__ = ["CheckOptions", "RunReport", "ServerStopped", "run_checks", "run_checks_sync"]

#: the liveness probe's bound after a timed-out case (at most the per-case timeout)
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class ServerStopped:
    """The server stopped answering: found in ``case_id`` (which timed out, and whose liveness
    probe got no answer: ``probe``), after ``after`` (the last case before it, or None)."""

    case_id: str
    after: str | None
    probe: str

    def describe(self) -> str:
        """``the server stopped answering after WS-ERR-03: GET /health gave no answer within 5 s``"""
        when = f"after {self.after}" if self.after else f"during {self.case_id}, the first case"
        return f"the server stopped answering {when}: {self.probe}"

    def not_run_reason(self) -> str:
        return f"not run: the server stopped answering during {self.case_id}"


@dataclass(slots=True)
class RunReport:
    """Everything a run produced: the setup it used and one result per case."""

    options: CheckOptions
    setup: Setup
    started_at: str
    duration_s: float = 0.0
    results: list[CaseResult] = field(default_factory=list)
    #: set when the server stopped answering during the run (the later cases were not run)
    stopped: ServerStopped | None = None
    #: how many cases were selected (``results`` holds fewer when the run was interrupted)
    selected: int = 0

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
    if reply is not None and reply.status in (401, 403):
        raise DriverError(_token_refused(options, f"GET /schema answered HTTP {reply.status}"))
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
    if action is not None and validator is not None and not validator.is_valid(action):
        raise DriverError(_action_refused(validator, action))
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


def _token_refused(options: CheckOptions, said: str) -> str:
    """One line for a server that refuses the kit for want of the right bearer token."""
    if options.token is None:
        return f"the server requires a bearer token ({said}): pass --token or set OPENENV_TOKEN"
    return f"the server refused the bearer token ({said}): check --token or OPENENV_TOKEN"


def _action_refused(validator: Validator, action: Mapping[str, Any]) -> str:
    """One line for an ``--action`` the server's own action schema refuses: the action is
    wrong, so no case would say anything about the server."""
    faults = validator.faults(action)
    why = f" at {faults[0].pointer or '/'}: {faults[0].message}" if faults else ""
    return f"--action is not a valid action for this server (its GET /schema refuses it{why})"


async def _run_case(case: Case, setup: Setup, recorder: Recorder, http: HttpProbe) -> CaseResult:
    recorder.case_id = case.id
    ctx = CaseContext(setup, recorder, http)
    verdict, reason = Verdict.PASS, None
    started = time.monotonic()
    limit_s = case.timeout_s(setup.options)
    with trio.move_on_after(limit_s) as scope:
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
        verdict, reason = Verdict.TIMEOUT, _timeout_reason(evidence, limit_s)
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


async def _probe_liveness(http: HttpProbe, bound: float) -> str | None:
    """None when the server answers ``GET /health`` (any status) within ``bound`` seconds;
    otherwise what happened instead. The probe is recorded with the current case's evidence."""
    with trio.move_on_after(bound):
        try:
            await http.request("GET", "/health")
        except DriverError as exc:  # refused, reset: nothing answers either
            return str(exc)
        return None
    return f"GET /health gave no answer within {bound:g} s"


def _not_run(case: Case, stopped: ServerStopped) -> CaseResult:
    return CaseResult(
        case_id=case.id,
        title=case.title,
        requirements=case.requirements,
        required=case.required,
        verdict=Verdict.NOT_RUN,
        reason=stopped.not_run_reason(),
    )


async def _check_openenv(options: CheckOptions, target: Target, http: HttpProbe) -> None:
    """Raise :class:`DriverError` saying the target is not an OpenEnv server when it answers
    neither ``GET /health`` with a JSON object nor a WebSocket handshake on ``/ws``, or that
    it requires a bearer token the run does not have (no case could say more)."""
    timeout_s = options.timeout_s
    with trio.move_on_after(timeout_s):
        try:
            health = await http.request("GET", "/health")
        except DriverError as exc:
            said = str(exc)
        else:
            if health.status == 200 and isinstance(health.body, Mapping):
                return
            said = f"GET /health answered HTTP {health.status}" + ("" if health.body is not None else " without JSON")
        try:
            async with open_ws(target, Recorder(), connect_timeout=timeout_s):
                return
        except HandshakeRejected as exc:
            if exc.status in (401, 403):
                raise DriverError(
                    _token_refused(options, f"the WebSocket handshake on /ws answered HTTP {exc.status}")
                ) from None
            refused = f"the WebSocket handshake on /ws was refused (HTTP {exc.status})"
        except DriverError as exc:
            refused = str(exc)
        raise DriverError(f"{target.http_base} is not an OpenEnv server: {said}, and {refused}")


def _timeout_reason(evidence: list[WireEvent], timeout_s: float) -> str:
    """Say what the case was waiting for when its time ran out."""
    last = evidence[-1] if evidence else None
    waiting = (
        f": no answer to {last.channel}#{last.connection} {last.preview}" if last and last.direction == "sent" else ""
    )
    return f"no verdict within {timeout_s:g} s (per-case timeout){waiting}"


async def run_checks(options: CheckOptions, *, on_start: Callable[[RunReport], None] | None = None) -> RunReport:
    """Run the selected cases against ``options.url`` (trio).

    Raises ``ValueError`` for a bad URL or case selection and :class:`DriverError` when the
    server cannot be reached at all or is not an OpenEnv server; everything else becomes a
    verdict. ``on_start`` receives the report before the first case runs: it fills as cases
    finish, so a caller interrupted meanwhile still has the verdicts so far.
    """
    target = Target.from_url(options.url, token=options.token)
    cases = select_cases(list(options.only) if options.only else None)
    await check_reachable(target, options.timeout_s)
    recorder = Recorder(secrets=(options.validation_token,) if options.validation_token else ())
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    # the client's proxy rule (loopback never through a proxy); WebSockets go direct
    proxy = proxy_url_for(options.url, os.environ)
    async with httpx.AsyncClient(timeout=options.timeout_s, proxy=proxy, trust_env=False) as client:
        http = HttpProbe(client, target, recorder)
        await _check_openenv(options, target, http)
        setup = Setup(options, target, schema_problem="GET /schema did not answer in time")
        with trio.move_on_after(options.timeout_s):
            setup = await _learn_setup(options, target, http)
        report = RunReport(options=options, setup=setup, started_at=started_at, selected=len(cases))
        if on_start is not None:
            on_start(report)
        for case in cases:
            if report.stopped is not None and not case.offline:
                report.results.append(_not_run(case, report.stopped))
                continue
            result = await _run_case(case, setup, recorder, http)
            if result.verdict is Verdict.TIMEOUT and report.stopped is None and not case.offline:
                silence = await _probe_liveness(http, min(PROBE_TIMEOUT_S, setup.timeout_s))
                if silence is not None:
                    after = report.results[-1].case_id if report.results else None
                    report.stopped = ServerStopped(case.id, after, silence)
                    result.reason = f"{report.stopped.describe()}; {result.reason}"
                    result.ended_run = True
                    result.evidence = recorder.for_case(case.id)
            report.results.append(result)
            report.duration_s = time.monotonic() - started
    report.duration_s = time.monotonic() - started
    return report


def run_checks_sync(options: CheckOptions, *, on_start: Callable[[RunReport], None] | None = None) -> RunReport:
    """:func:`run_checks` from synchronous code (starts its own trio event loop)."""
    return trio.run(functools.partial(run_checks, options, on_start=on_start))
