"""EXT-HAND-01, the hand-over case, against real servers: not offered by a server without a
session store; claimed but not exercised without ``--restart-command``; and failed by a
server that claims the hand-over but ends its sessions when it restarts (the command really
restarts it, on the same port)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from restartable import restartable_server

from openenv_anyio.conformance.cli import configure
from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync
from openenv_anyio.conformance.verdicts import CaseResult, Verdict
from openenv_anyio.server import EnvServer, ServerConfig

from .handover_envs import ClaimingCounter, HandoverCounter

ACTION = {"n": 1}


def hand_over_case(url: str, **options: object) -> CaseResult:
    report = run_checks_sync(CheckOptions(url, action=ACTION, only=["EXT-HAND-01"], timeout_s=10, **options))  # type: ignore[arg-type]
    (result,) = report.results
    return result


@pytest.fixture
def claiming_url() -> Iterator[str]:
    with EnvServer(ClaimingCounter, ServerConfig(host="127.0.0.1", port=0)).run_in_thread() as running:
        yield running.url


def test_a_server_without_a_store_does_not_offer_it() -> None:
    with EnvServer(HandoverCounter, ServerConfig(host="127.0.0.1", port=0)).run_in_thread() as running:
        result = hand_over_case(running.url, restart_command="false")
    assert result.verdict is Verdict.NOT_APPLICABLE and result.reason is not None
    assert result.reason.startswith("not offered: GET /metadata has no handover")
    assert not result.fails_run


def test_a_claim_without_the_restart_command_is_not_exercised(claiming_url: str) -> None:
    result = hand_over_case(claiming_url)
    assert result.verdict is Verdict.NOT_APPLICABLE and result.reason is not None
    assert result.reason.startswith("claimed, not exercised") and "--restart-command" in result.reason


def test_a_failing_restart_command_fails_the_case_and_says_so(claiming_url: str) -> None:
    result = hand_over_case(claiming_url, restart_command="echo no such service >&2; exit 3")
    assert result.verdict is Verdict.FAIL and result.reason is not None
    assert "exited with status 3" in result.reason and "no such service" in result.reason


def test_a_false_claim_fails(tmp_path: Path) -> None:
    """The server says handover but has no store: the restart ends the session (close 1001,
    and the restarted server does not know the token)."""
    with restartable_server("conformance.handover_envs:ClaimingCounter", tmp_path / "server") as server:
        result = hand_over_case(server.url, restart_command=server.command, restart_timeout_s=60)
    assert result.verdict is Verdict.FAIL and result.reason is not None, result
    assert "1001" in result.reason and "not 1012" in result.reason
    assert any("restarted the server with" in note for note in result.notes)


def test_after_a_crash_a_server_that_is_not_durable_must_refuse_the_session(tmp_path: Path) -> None:
    """A crash (SIGKILL) of a server that says it is not durable: the session is lost by
    design (EXT-HAND-4), and the case wants SESSION_NOT_FOUND then 4404 (never a fresh
    episode), which the restarted server gives: the case passes, and says why."""
    with restartable_server("conformance.handover_envs:ClaimingCounter", tmp_path / "server") as server:
        result = hand_over_case(server.url, restart_command=server.kill_command, restart_timeout_s=60)
    assert result.verdict is Verdict.PASS, result
    assert any("without a close frame" in note for note in result.notes)
    assert any("was not handed over (a crash, and the server is not durable)" in note for note in result.notes)


def test_check_help_documents_the_restart_command() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    configure(parser)
    text = parser.format_help()
    assert "--restart-command CMD" in text and "EXT-HAND-01" in text and "--restart-timeout S" in text


def test_a_server_that_hands_its_sessions_over_passes(tmp_path: Path) -> None:
    """``serve --session-store``: SIGTERM hands the session over (1012), the restarted server
    takes it back: resumed, continued, the last step answered from the ledger, one more counted."""
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    target = "conformance.handover_envs:HandoverCounter"
    with restartable_server(target, tmp_path / "server", "--session-store", store) as server:
        result = hand_over_case(server.url, restart_command=server.command, restart_timeout_s=60)
    assert result.verdict is Verdict.PASS, result
    closes = [e for e in result.evidence if e.kind == "close"]
    assert any(e.close_code == 1012 for e in closes), closes


def test_a_durable_server_passes_after_a_crash(tmp_path: Path) -> None:
    """``--durable``: SIGKILL in the middle of the episode, and the session is taken back (EXT-HAND-4)."""
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    target = "conformance.handover_envs:HandoverCounter"
    with restartable_server(target, tmp_path / "server", "--session-store", store, "--durable") as server:
        result = hand_over_case(server.url, restart_command=server.kill_command, restart_timeout_s=60)
    assert result.verdict is Verdict.PASS, result
    assert any("without a close frame" in note for note in result.notes)
