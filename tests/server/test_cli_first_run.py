"""What a newcomer meets first with ``openenv-anyio serve``: the limits and mistakes are
said in one line, at start."""

from __future__ import annotations

import re
import socket
import subprocess

import pytest

from .test_cli import ROOT, environment, serve_command


def _environment() -> dict[str, str]:
    env = environment()
    env["PYTHONPATH"] = f"{ROOT}{':'}{ROOT / 'tests'}"
    return env


def _start_lines(*args: str) -> list[str]:
    """stderr of ``serve ARGS --port 0`` up to and including the banner (``serving on``)."""
    process = subprocess.Popen(
        serve_command(*args, "--port", "0"), stderr=subprocess.PIPE, text=True, env=_environment()
    )
    lines: list[str] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if "serving on" in line:
                break
        return lines
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_one_session_env_says_so_at_start() -> None:
    """An openenv-core env without SUPPORTS_CONCURRENT_SESSIONS gets one session: say it, and why."""
    lines = _start_lines("conformance.dipg_like:QuizEnv")
    limit = [line for line in lines if "session" in line and "serving on" not in line]
    assert limit, lines
    assert "at most 1 concurrent session" in limit[0] and "SUPPORTS_CONCURRENT_SESSIONS" in limit[0], limit


def test_the_effective_limit_is_printed_when_unlimited_or_configured() -> None:
    assert any("no session limit" in line for line in _start_lines("openenv_anyio.envs.guess:GuessNumberEnv"))
    configured = _start_lines("openenv_anyio.envs.guess:GuessNumberEnv", "--max-concurrent-envs", "3")
    assert any("at most 3 concurrent sessions (--max-concurrent-envs)" in line for line in configured), configured


def test_help_says_what_the_default_limit_is() -> None:
    done = subprocess.run(serve_command("--help"), capture_output=True, text=True, timeout=60, env=_environment())
    flat = " ".join(done.stdout.split())
    assert "default: none" not in flat
    assert "SUPPORTS_CONCURRENT_SESSIONS" in flat


def _one_line_failure(*args: str) -> str:
    done = subprocess.run(serve_command(*args), capture_output=True, text=True, timeout=60, env=_environment())
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str) -> None:
    done = subprocess.run(
        serve_command("openenv_anyio.envs.guess:GuessNumberEnv", "--port", port),
        capture_output=True,
        text=True,
        timeout=60,
        env=_environment(),
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--port" in done.stderr.strip().splitlines()[-1] and port in done.stderr


def test_a_taken_address_is_one_line_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = _one_line_failure("openenv_anyio.envs.guess:GuessNumberEnv", "--port", str(port))
    assert f"127.0.0.1:{port}" in message and "in use" in message


def test_a_class_that_cannot_be_built_fails_at_start() -> None:
    message = _one_line_failure("server.first_run_envs:NeedsArguments", "--port", "0")
    assert "NeedsArguments" in message and "dataset" in message


def test_a_class_without_step_fails_at_start() -> None:
    message = _one_line_failure("server.first_run_envs:NoStep", "--port", "0")
    assert re.search(r"NoStep.*step", message), message
