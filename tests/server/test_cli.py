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
