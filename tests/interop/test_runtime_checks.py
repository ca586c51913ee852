"""Upstream's own Level-2 runtime checks (openenv 0.10's ``openenv.validation``: the collector
and the reward, observation-schema and state-contract graders, run from the openenv-0.10.0
peer venv by ``tests/peer_side/runtime_checks.py``) against every env of the interop matrix:
each release's template on upstream's own server and on ours through the adapter, and our
echo env on our server.

A check upstream's server fails for its template is the release's defect, recorded in
``runtime-baselines/NAME.txt`` (check ID, then why), as the kit's ``kit-baselines/``; our
server serving the same template must give the same verdicts (drop-in), and our own env
must pass every check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_anyio.conformance.baseline import load_baseline
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig
from tests.upstream_peers import Peer, peer_named, run_peer_script

BASELINES = Path(__file__).parent / "runtime-baselines"
#: the graders of openenv 0.10.0's ``openenv.validation.graders.runtime`` that these tests run
CHECKS = ("runtime.reward_well_formed", "runtime.observation_schema", "runtime.state_contract")
#: the template's actions (its reward is a tenth of the message's length: within [0, 1])
TEMPLATE_PLAN = {
    "plan_schema_version": "1",
    "reset": {"episode_id": "ep-runtime", "seed": 3},
    "actions": [{"message": "hi"}, {"message": "hello"}, {"message": "x"}],
}


def graded(url: str, plan: dict[str, Any], reward_range: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any]:
    """The runtime checks of the newest openenv release against ``url``."""
    grader = peer_named("openenv")
    report: dict[str, Any] = run_peer_script(
        grader, "runtime_checks.py", url, json.dumps(plan), *(str(bound) for bound in reward_range)
    )
    assert report["failure"] is None, report  # the collection completed: every check judged something
    assert set(report["checks"]) == set(CHECKS)
    return report


def failed(report: dict[str, Any]) -> dict[str, list[str]]:
    return {check: r["evidence"] for check, r in report["checks"].items() if r["status"] != "pass"}


def recorded_defects(peer: Peer) -> dict[str, str]:
    """Check ID -> why, from ``runtime-baselines/NAME.txt``."""
    baseline = BASELINES / f"{peer.name}.txt"
    assert baseline.exists(), f"record the runtime checks' verdicts for {peer.name} in {baseline}"
    recorded = load_baseline(baseline, (check.upper() for check in CHECKS))  # the kit's format: IDs read upper-cased
    return {check.lower(): why for check, why in recorded.items()}


@pytest.fixture(scope="module")
def upstream_report(peer: Peer, upstream_url: str) -> dict[str, Any]:
    return graded(upstream_url, TEMPLATE_PLAN)


def test_upstream_server_fails_only_the_recorded_checks(peer: Peer, upstream_report: dict[str, Any]) -> None:
    expected = recorded_defects(peer)
    assert set(failed(upstream_report)) == set(expected), failed(upstream_report)
    for check in expected:
        assert upstream_report["checks"][check]["status"] == "fail"  # judged, not skipped


def test_our_server_gives_the_adapted_template_the_same_verdicts(
    peer: Peer, upstream_report: dict[str, Any], adapter_url: str
) -> None:
    """Drop-in: the same env through our adapter is judged as on upstream's server; and ours
    always tells the reset observation's schema (HTTP-3), where openenv-core 0.3 does not."""
    ours = graded(adapter_url, TEMPLATE_PLAN)
    assert {c: r["status"] for c, r in ours["checks"].items()} == {
        c: r["status"] for c, r in upstream_report["checks"].items()
    }
    assert ours["reset_observation_schema"] is True
    assert upstream_report["reset_observation_schema"] is (peer.version_tuple >= (0, 10))


@pytest.fixture(scope="module")
def our_echo_url() -> Iterator[str]:
    config = ServerConfig(host="127.0.0.1", port=0, validate_outbound=True, shutdown_grace_s=2.0)
    with EnvServer(EchoEnv, config).run_in_thread() as running:
        yield running.url


def test_our_echo_env_passes_every_check(our_echo_url: str) -> None:
    plan = {**TEMPLATE_PLAN, "actions": [{"message": "hi"}, {"message": ""}]}
    report = graded(our_echo_url, plan, reward_range=(0.0, 10.0))  # the echo env's reward is the length
    assert failed(report) == {}
    assert report["exchanges"] == ["reset", "state", "step", "state", "step", "state"]


def test_a_reward_out_of_the_declared_range_fails_its_check(our_echo_url: str) -> None:
    """The graders judge, they do not wave through: a reward of 5 against a range of [0, 1]."""
    report = graded(our_echo_url, {**TEMPLATE_PLAN, "actions": [{"message": "hello"}]})
    assert set(failed(report)) == {"runtime.reward_well_formed"}
