"""The kit against the project's own server: every required case passes (acceptance of the
conformance issue). Runs once ``openenv_anyio.server`` is part of the tree."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import pytest

from openenv_anyio import server
from openenv_anyio.conformance.driver import DriverError
from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync


class KitEchoEnv:
    """An echo environment written against the Environment API contract (duck typed)."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
        "additionalProperties": False,
    }
    metadata: ClassVar[dict[str, Any]] = {"name": "KitEcho", "description": "echo", "version": "1.0.0"}

    def __init__(self) -> None:
        self.episode_id: str | None = None
        self.step_count = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        self.episode_id, self.step_count = episode_id or str(uuid.uuid4()), 0
        return {"echoed": "", "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.step_count += 1
        return {"echoed": action["message"], "reward": float(len(action["message"])), "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count}

    # the Task API (TASK-1): two prompts to echo
    def list_splits(self) -> list[str]:
        return ["train"]

    def num_tasks(self, split: str) -> int:
        return len({"train": ["hi", "hello"]}[split])

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return {"prompt": {"train": ["hi", "hello"]}[split][index]}


def test_every_required_case_passes_against_our_server() -> None:
    """With validation telemetry on (the VAL cases need the server's token, VAL-OPEN-1) and a
    bearer token (SEC-01 needs one)."""
    token, bearer = "kit-validation-token-0123456789abcdef", "kit-bearer-token-0123456789abcdef"
    config = server.ServerConfig(
        host="127.0.0.1", port=0, max_message_size_mb=1.0, max_concurrent_envs=4, validation_token=token, token=bearer
    )
    with server.EnvServer(KitEchoEnv, config).run_in_thread() as running:
        report = run_checks_sync(
            CheckOptions(
                running.url,
                timeout_s=10,
                frame_limit_mb=1.0,
                max_sessions=4,
                validation_token=token,
                token=bearer,
            )
        )
    not_passed = {r.case_id: r.reason for r in report.results if r.verdict.value != "pass"}
    # no session store here (tests/conformance/test_handover_case.py runs EXT-HAND-01 with one)
    assert not_passed.pop("EXT-HAND-01", "").startswith("not offered")
    assert not_passed == {}
    assert report.passed


def test_a_token_protected_server_passes_with_the_token_and_never_shows_it(tmp_path) -> None:
    """SEC-TOKEN-1: the kit sends ``--token`` with every WebSocket and HTTP request."""
    import json
    import os
    import subprocess
    import sys

    token = "kit-token-0123456789abcdef"
    config = server.ServerConfig(host="127.0.0.1", port=0, max_message_size_mb=1.0, max_concurrent_envs=4, token=token)
    with server.EnvServer(KitEchoEnv, config).run_in_thread() as running:
        with pytest.raises(DriverError, match="requires a bearer token"):  # without it, no case runs
            run_checks_sync(CheckOptions(running.url, timeout_s=10, only=["WS-RESET-01"]))
        report_path = tmp_path / "report.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "openenv_anyio",
                "check",
                running.url,
                "--frame-limit-mb",
                "1",
                "--max-sessions",
                "4",
                "--json",
                str(report_path),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OPENENV_TOKEN": token},
        )
    assert done.returncode == 0, done.stdout[-3000:]
    assert token not in done.stdout + done.stderr + report_path.read_text()
    assert json.loads(report_path.read_text())["passed"] is True
