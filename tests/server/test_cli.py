"""``openenv-anyio serve``: one-line errors, clean exit on SIGINT/SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[2]


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "openenv_anyio", "serve", *args]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("target", ["no_such_module_xyz:Env", "openenv_anyio.envs.echo:Missing", "no-colon"])
def test_bad_target_is_a_one_line_error(target: str) -> None:
    done = subprocess.run(serve_command(target), capture_output=True, text=True, timeout=60, env=environment())
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serves_until_signalled_then_exits_0(signum: int) -> None:
    process = subprocess.Popen(
        serve_command("openenv_anyio.envs.guess:GuessNumberEnv", "--port", "0"),
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    try:
        assert process.stderr is not None
        url = None
        for line in process.stderr:
            match = re.search(r"serving on (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        assert url, "the server announced its URL"
        assert httpx.get(url + "/health", timeout=10).json() == {"status": "healthy"}
        process.send_signal(signum)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigterm_with_a_stuck_close_exits_1_naming_the_env() -> None:
    """SRV-FAULT-3: shutdown waits for a hung close() only up to the bound, then exits
    non-zero with one line naming the environment."""
    process = subprocess.Popen(
        serve_command("tests.server.aborting_envs:HangingClose", "--port", "0", "--shutdown-grace", "0.5"),
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    try:
        assert process.stderr is not None
        url = None
        for line in process.stderr:
            match = re.search(r"serving on (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        assert url, "the server announced its URL"
        with connect("ws" + url.removeprefix("http") + "/ws", open_timeout=10) as ws:
            ws.send('{"type":"reset"}')
            ws.recv(timeout=10)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 1
        rest = process.stderr.read()
        stuck = [line for line in rest.splitlines() if "did not close" in line]
        assert len(stuck) == 1 and "HangingClose" in stuck[0], rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def started(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str, list[str]]:
    """``serve`` running, its URL, and the stderr lines up to the announcement."""
    process = subprocess.Popen(serve_command(*args), stderr=subprocess.PIPE, text=True, env=env or environment())
    assert process.stderr is not None
    lines: list[str] = []
    for line in process.stderr:
        lines.append(line)
        match = re.search(r"serving on (http://\S+)", line)
        if match:
            return process, match.group(1), lines
    process.wait(timeout=30)
    raise AssertionError("the server did not announce its URL: " + "".join(lines))


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    "flags",
    [
        ["--allow-origin", "not-an-origin"],
        ["--token-file", "/nonexistent/token"],
        ["--token", "has space"],
        ["--token", "a", "--token-file", "b"],
    ],
)
def test_bad_access_flags_are_one_line_errors(flags: list[str]) -> None:
    done = subprocess.run(
        serve_command("openenv_anyio.envs.echo:EchoEnv", "--port", "0", *flags),
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "has space" not in done.stderr


@pytest.mark.parametrize("how", ["env", "file"])
def test_the_token_from_the_environment_or_a_file_protects_the_routes(how: str, tmp_path: Path) -> None:
    """SEC-TOKEN-1: ``$OPENENV_TOKEN`` or ``--token-file``; never printed."""
    token = "cli-token-0123456789"
    env, args = environment(), ["openenv_anyio.envs.echo:EchoEnv", "--port", "0"]
    if how == "env":
        env["OPENENV_TOKEN"] = token
    else:
        (tmp_path / "token").write_text(f"{token}\n")
        args += ["--token-file", str(tmp_path / "token")]
    process, url, lines = started(*args, env=env)
    try:
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        assert httpx.get(url + "/schema", timeout=10).status_code == 401
        assert httpx.get(url + "/schema", headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code == 200
    finally:
        stop(process)
    assert process.stderr is not None
    assert token not in "".join(lines) + process.stderr.read()


def test_a_non_loopback_address_without_a_token_is_warned_about(tmp_path: Path) -> None:
    """Started on every address without a token: a warning first; with a token none."""
    process, _, lines = started("openenv_anyio.envs.echo:EchoEnv", "--host", "0.0.0.0", "--port", "0")
    stop(process)
    assert any("WARNING" in line and "without a token" in line for line in lines), lines
    (tmp_path / "token").write_text("some-token-value\n")
    process, _, lines = started(
        "openenv_anyio.envs.echo:EchoEnv", "--host", "0.0.0.0", "--port", "0", "--token-file", str(tmp_path / "token")
    )
    stop(process)
    assert not any("WARNING" in line for line in lines), lines
