"""``ServerConfig.switch_interval_s`` / ``serve --switch-interval``: the interpreter's thread
switch interval while a server runs, in every worker process, and the previous one after
(a server in this process: ``test_gc_policy.py``, beside the gc threshold)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from serve_process import serve_process

from openenv_anyio.server import ServerConfig
from openenv_anyio.server.switch_interval import switch_interval
from tests.server.interval_env import every_workers_report

TIMEOUT = 20.0


@pytest.fixture(autouse=True)
def default_interval() -> Iterator[None]:
    saved = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(saved)


def test_set_within_and_restored_after_nested_holders() -> None:
    with switch_interval(0.05):
        assert sys.getswitchinterval() == pytest.approx(0.05)
        with switch_interval(0.02):  # a second server in the same process finds it set
            assert sys.getswitchinterval() == pytest.approx(0.05)
        assert sys.getswitchinterval() == pytest.approx(0.05)
    assert sys.getswitchinterval() == pytest.approx(0.005)
    with switch_interval(None):
        assert sys.getswitchinterval() == pytest.approx(0.005)


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), switch_interval(0.05):
        raise RuntimeError("boom")
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_config_refuses_an_interval_that_is_not_positive() -> None:
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="switch_interval_s must be positive"):
            ServerConfig(switch_interval_s=bad)
    assert ServerConfig().switch_interval_s is None


def test_the_cli_refuses_a_bad_interval_in_one_line() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv_anyio",
            "serve",
            "openenv_anyio.envs.guess:GuessNumberEnv",
            "--switch-interval",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "openenv-anyio serve: --switch-interval must be positive (leave it unset for the interpreter's)"
    )


def test_every_worker_serves_with_the_interval() -> None:
    with serve_process(
        "tests.server.interval_env:SwitchIntervalEnv", "--workers", "2", "--switch-interval", "0.05"
    ) as served:
        reports = every_workers_report(served.url, served.pids, TIMEOUT)
        seen = {pid: report["switch_interval"] for pid, report in reports.items()}
        assert sorted(seen) == sorted(served.pids)
        assert all(value == pytest.approx(0.05) for value in seen.values())
