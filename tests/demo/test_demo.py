"""``openenv-anyio demo``: the main job, end to end in a subprocess (real server, real agents)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server import EnvServer, ServerConfig
from tests.conformance.openenv_core_echo import run_openenv_core_server


def demo(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def summary_rows(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows by their first cell (agent number or ``all``)."""
    rows = {}
    for line in stdout.splitlines():
        cells = line.split()
        if cells and (cells[0].isdigit() or cells[0] == "all"):
            rows[cells[0]] = cells
    return rows


def test_demo_serves_cartpole_and_runs_agents() -> None:
    done = demo("--agents", "3", "--episodes", "2", "--max-steps", "60")
    assert done.returncode == 0, done.stderr
    rows = summary_rows(done.stdout)
    assert set(rows) == {"0", "1", "2", "all"}
    assert rows["all"][1] == "6"  # episodes
    assert rows["all"][-1] == "0"  # errors
    assert float(rows["all"][2]) > 0  # mean return: CartPole pays 1 a step
    assert "episodes" in done.stderr  # progress was shown


def test_demo_against_a_running_server_of_ours() -> None:
    with EnvServer(GuessNumberEnv, ServerConfig(host="127.0.0.1", port=0)).run_in_thread() as running:
        done = demo("--url", running.url, "--agents", "2", "--episodes", "3", "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = summary_rows(done.stdout)
    assert rows["all"][1] == "6" and rows["all"][-1] == "0"


def test_demo_against_the_real_openenv_server_uses_its_action_schema() -> None:
    with run_openenv_core_server(max_concurrent_envs=4) as url:
        done = demo("--url", url, "--agents", "2", "--episodes", "2", "--max-steps", "5", "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = summary_rows(done.stdout)
    assert rows["all"][1] == "4" and rows["all"][-1] == "0"
    assert rows["all"][4] == "20"  # 2 agents x 2 episodes x 5 schema-built steps, none refused


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "0"], "expected a number >= 1"),
        (["--episodes", "many"], "expected a whole number"),
        (["--env", "no_such_module_xyz:Env"], "no_such_module_xyz"),
        (["--env", "gymnasium:NoSuchEnv-v9"], "NoSuchEnv-v9"),
        (["--url", "http://127.0.0.1:9"], "127.0.0.1:9"),
        (["--token", "abc", "--agents", "1"], "--token goes with --url"),
        (["--url", "http://127.0.0.1:9", "--token", "two words"], "token must be"),
    ],
)
def test_bad_arguments_are_one_line_errors(args: list[str], message: str) -> None:
    done = demo(*args, "--no-progress", timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]  # argparse may print its usage before it
    assert last.startswith("openenv-anyio demo") and message in last


@pytest.mark.parametrize(("signum", "status", "said"), [(2, 130, "interrupted"), (15, 143, "stopped by SIGTERM")])
def test_ctrl_c_stops_server_and_agents_cleanly(signum: int, status: int, said: str) -> None:
    """SIGINT (or SIGTERM, as a supervisor stops it) cancels the one nursery that owns server
    and agents: the shell's status for that signal (130, 143), no traceback."""
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "openenv_anyio", "demo", "--agents", "4", "--episodes", "1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        while "episodes" not in process.stderr.readline():  # the first progress line
            assert time.monotonic() < deadline and process.poll() is None
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == status
    assert said in stderr and "Traceback" not in stderr
    assert set(summary_rows(stdout)) == {"0", "1", "2", "3", "all"}, stdout  # the episodes so far


@pytest.mark.parametrize("env", ["SlowInlineEnv", "SlowAsyncEnv", "SlowLiftEnv"])
def test_ctrl_c_while_env_code_runs_on_the_loop_stops_the_demo(env: str) -> None:
    """Ctrl-C is the user's, not the environment's: arriving while an inline or async env's own
    code runs on the event loop's thread, it stops everything (exit 130) instead of being taken
    for that env raising KeyboardInterrupt (SRV-FAULT-1), which ended one session and left the
    demo running."""
    import signal
    import time

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openenv_anyio",
            "demo",
            "--env",
            f"tests.demo.slow_env:{env}",
            "--agents",
            "1",
            "--episodes",
            "1000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        while "episodes" not in process.stderr.readline():  # the first progress line
            assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)  # well inside the next step's 0.2 s of env code
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "raised KeyboardInterrupt" not in stderr, stderr


def test_the_summary_names_the_env_and_policy_and_why_agents_failed() -> None:
    """Against a one-session server, the agents beyond the limit are refused: the summary says
    so (their first error), and which environment and policy ran."""
    with EnvServer(
        GuessNumberEnv, ServerConfig(host="127.0.0.1", port=0, max_concurrent_envs=1)
    ).run_in_thread() as running:
        done = demo("--url", running.url, "--agents", "3", "--episodes", "2", "--no-progress")
    assert done.returncode == 1
    assert "GuessNumberEnv" in done.stdout and "policy" in done.stdout, done.stdout
    assert "CapacityReached" in done.stdout, done.stdout


def test_a_failing_env_is_reported_in_the_summary_not_as_raw_log_records() -> None:
    done = demo("--env", "tests.demo.failing_env:FailingStepEnv", "--agents", "1", "--episodes", "1", "--no-progress")
    assert done.returncode == 1
    assert summary_rows(done.stdout)["all"][-1] == "1"  # errors
    assert "{'" not in done.stderr, done.stderr  # a server log record printed as a dict


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_demo_drives_a_token_protected_server_and_never_shows_the_token(how: str) -> None:
    """SEC-TOKEN-1 from the demo's side: ``--token`` (or ``$OPENENV_TOKEN``) is sent on every
    request and connection, and appears in none of the demo's output."""
    token = "agent-token-for-the-demo-test"
    config = ServerConfig(host="127.0.0.1", port=0, token="operator-token-unused", agent_tokens=(token,))
    with EnvServer(GuessNumberEnv, config).run_in_thread() as running:
        refused = demo("--url", running.url, "--agents", "1", "--episodes", "1", "--no-progress")
        args = ["--url", running.url, "--agents", "2", "--episodes", "2", "--no-progress"]
        env = {**os.environ, "OPENENV_TOKEN": token} if how == "environment" else None
        done = demo(*args, *(["--token", token] if how == "flag" else []), env=env)
    assert refused.returncode == 1 and "401" in refused.stdout + refused.stderr
    assert done.returncode == 0, done.stderr
    rows = summary_rows(done.stdout)
    assert rows["all"][1] == "4" and rows["all"][-1] == "0"
    assert token not in done.stdout + done.stderr


@pytest.mark.parametrize("server", ["ours", "openenv-core"])
def test_against_a_one_session_server_the_summary_suggests_agents_1(server: str) -> None:
    import contextlib

    with contextlib.ExitStack() as stack:
        if server == "ours":
            config = ServerConfig(host="127.0.0.1", port=0, max_concurrent_envs=1)
            url = stack.enter_context(EnvServer(GuessNumberEnv, config).run_in_thread()).url
        else:
            url = stack.enter_context(run_openenv_core_server(max_concurrent_envs=1))
        done = demo("--url", url, "--agents", "3", "--episodes", "2", "--max-steps", "50", "--no-progress")
    assert done.returncode == 1
    assert "run with --agents 1" in done.stdout, done.stdout
