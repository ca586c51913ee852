"""The kit's VAL cases (validation telemetry, episode determinism and isolation) against our
server with and without telemetry, and against servers that get them wrong."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx

from openenv_anyio.conformance.reports import to_json
from openenv_anyio.conformance.runner import CheckOptions, RunReport, run_checks_sync
from openenv_anyio.conformance.verdicts import Verdict
from tests.server.conftest import running
from tests.validation.envs import DiceEnv, QuizEnv

TOKEN = "kit-validation-token-" + "5" * 32
ACTION = {"guess": 3}


def verdicts(report: RunReport) -> dict[str, tuple[Verdict, str | None]]:
    return {r.case_id: (r.verdict, r.reason) for r in report.results if r.case_id.startswith("VAL-")}


def check(url: str, **options: Any) -> RunReport:
    return run_checks_sync(CheckOptions(url, timeout_s=10, action=ACTION, only=["VAL"], **options))


def test_with_telemetry_every_val_case_passes_and_no_report_shows_the_token() -> None:
    with running(DiceEnv, validation_token=TOKEN) as server:
        report = check(server.url, validation_token=TOKEN)
    assert {case: verdict for case, (verdict, _) in verdicts(report).items()} == {
        f"VAL-0{n}": Verdict.PASS for n in range(1, 6)
    }
    assert TOKEN not in repr(report) and TOKEN not in json.dumps(to_json(report))


def test_without_a_token_the_telemetry_cases_say_not_offered() -> None:
    with running(DiceEnv) as server:
        without_token = verdicts(check(server.url))
        refused = verdicts(check(server.url, validation_token=TOKEN))
    assert without_token["VAL-01"][0] is Verdict.PASS  # a refusal needs no token to be judged
    for case in ("VAL-02", "VAL-03"):
        verdict, reason = without_token[case]
        assert verdict is Verdict.NOT_APPLICABLE and "not offered" in str(reason)
        # given a token the server was not started with: telemetry is refused, a failure
        assert refused[case][0] is Verdict.FAIL
    assert without_token["VAL-04"][0] is without_token["VAL-05"][0] is Verdict.PASS


class CoinEnv(DiceEnv):
    """Ignores the seed: every episode draws from the process's generator."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        observation = super().reset(seed=None, episode_id=episode_id)
        self._rng = random.Random()
        return observation


class LeakyEnv(DiceEnv):
    """Keeps the rolls of earlier episodes in its state after a reset."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        earlier = list(self._history)
        observation = super().reset(seed=seed, episode_id=episode_id)
        self._history = earlier
        return observation


def test_a_nondeterministic_or_leaky_environment_fails_the_replay_cases() -> None:
    with running(CoinEnv) as server:
        coin = verdicts(check(server.url))
    with running(LeakyEnv) as server:
        leaky = verdicts(check(server.url))
    assert coin["VAL-04"][0] is Verdict.FAIL and "differ" in str(coin["VAL-04"][1])
    assert leaky["VAL-04"][0] is Verdict.PASS  # each fresh session starts clean
    assert leaky["VAL-05"][0] is Verdict.FAIL and "episode A" in str(leaky["VAL-05"][1])


def test_the_task_api_case_passes_on_our_server_and_says_not_offered_without_tasks() -> None:
    with running(QuizEnv) as server:
        report = run_checks_sync(CheckOptions(server.url, timeout_s=10, only=["TASK-01"]))
    assert report.result("TASK-01").verdict is Verdict.PASS, report.result("TASK-01").reason
    with running(DiceEnv) as server:
        report = run_checks_sync(CheckOptions(server.url, timeout_s=10, only=["TASK-01"]))
    result = report.result("TASK-01")
    assert result.verdict is Verdict.NOT_APPLICABLE and "not offered" in (result.reason or "")


def test_the_orchestrator_token_opens_ws_and_a_missing_or_wrong_one_is_refused() -> None:
    """RFC 009's orchestrator (reset/step/state on /ws) is our agent token; the operator's
    opens it too (docs/security.md); a server without tokens is 'not offered'."""
    operator, orchestrator = "operator-token-" + "1" * 24, "orchestrator-token-" + "2" * 24
    with running(DiceEnv, token=operator, agent_tokens=(orchestrator,)) as server:
        for token in (orchestrator, operator):
            report = run_checks_sync(CheckOptions(server.url, timeout_s=10, only=["SEC-01"], token=token))
            assert report.result("SEC-01").verdict is Verdict.PASS, report.result("SEC-01").reason
            assert token not in json.dumps(to_json(report))
        with httpx.Client(base_url=server.url, timeout=10) as http:  # the orchestrator drives sessions only
            assert http.get("/metrics", headers={"Authorization": f"Bearer {orchestrator}"}).status_code == 403
            refused = http.get("/metadata")
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    with running(DiceEnv) as server:
        report = run_checks_sync(CheckOptions(server.url, timeout_s=10, only=["SEC-01"], token=orchestrator))
    assert report.result("SEC-01").verdict is Verdict.NOT_APPLICABLE
