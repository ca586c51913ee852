"""The command line's edges, as a newcomer meets them: every bad input or surprise is one
clear line (no traceback, no internal names), and what the command did is said."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_process import serve_environment, serve_process

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_anyio", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=serve_environment(),
    )


@contextlib.contextmanager
def _started(*args: str, cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """``openenv-anyio ARGS`` as a process of its own (standard output and error piped), killed
    on the way out if it is still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "openenv_anyio", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=serve_environment(),
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _one_clean_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


# --- serve ----------------------------------------------------------------------------------


def test_a_session_limit_lowered_by_the_environment_is_said_at_start_and_in_metadata() -> None:
    with serve_process("cli_edge_envs:SingleSession", "--max-concurrent-envs", "8") as served:
        line = served.wait_for_line(r"concurrent session").string
        assert "--max-concurrent-envs 8 lowered to 1" in line and "SingleSession.MAX_CONCURRENT_SESSIONS" in line
        with urllib.request.urlopen(served.url + "/metadata", timeout=10) as response:
            metadata = json.load(response)
    assert metadata["max_concurrent_envs"]["requested"] == 8
    assert metadata["max_concurrent_envs"]["in_force"] == 1
    assert "lowered to 1" in metadata["max_concurrent_envs"]["why"]
    assert not any("limiting to" in line for line in served.lines)  # said once, not also as a log warning


def test_the_banner_comes_before_the_server_started_event() -> None:
    with serve_process("openenv_anyio.envs.echo:EchoEnv") as served:
        served.wait_for_line(r"server_started")
        lines = list(served.lines)
    said = [i for i, line in enumerate(lines) if line.startswith("openenv-anyio: ")]
    started = next(i for i, line in enumerate(lines) if "server_started" in line)
    assert said and max(said) < started, lines


def test_a_bad_flag_value_names_the_flag_not_the_setting() -> None:
    line = _one_clean_line(_run("serve", "openenv_anyio.envs.echo:EchoEnv", "--session-timeout", "0"))
    assert "--session-timeout" in line and "session_timeout_s" not in line
    line = _one_clean_line(_run("serve", "openenv_anyio.envs.echo:EchoEnv", "--max-message-size-mb", "-1"))
    assert "--max-message-size-mb" in line and "max_message_size_mb" not in line


def test_a_target_that_is_not_an_environment_says_what_it_is_in_plain_words() -> None:
    line = _one_clean_line(_run("serve", "openenv_anyio.conformance.driver:MAX_RECEIVE_BYTES"))
    assert "is a int" not in line and "a whole number (268435456)" in line


# --- demo -----------------------------------------------------------------------------------


def test_demo_url_with_an_unusable_scheme_is_one_line() -> None:
    done = _run("demo", "--url", "ftp://x")
    assert done.returncode != 0
    assert "ftp" in _one_clean_line(done)


@pytest.mark.parametrize("suffix", ["/ws", "/ws/", ""])
def test_demo_url_may_name_the_agent_channel(suffix: str) -> None:
    with EnvServer(EchoEnv, ServerConfig(port=0)).run_in_thread() as running:
        done = _run(
            "demo",
            "--url",
            running.url + suffix,
            "--agents",
            "1",
            "--episodes",
            "1",
            "--max-steps",
            "3",
            "--no-progress",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "<html" not in (done.stdout + done.stderr).lower() and "/ws/ws" not in done.stdout + done.stderr


# --- check ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _plain_web_server(folder: Path) -> Iterator[int]:
    """Python's own HTTP server on a free loopback port, serving ``folder``: not OpenEnv."""
    web = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert web.stdout is not None
        yield int(web.stdout.readline().split("port ")[1].split()[0])
    finally:
        web.terminate()
        web.wait(10)


def test_check_against_a_server_that_is_not_openenv_says_so_first(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html>hello</html>")
    with _plain_web_server(tmp_path) as port:
        done = _run("check", f"http://127.0.0.1:{port}")
    assert done.returncode != 0
    first = (done.stdout + done.stderr).strip().splitlines()[0]
    assert "not an OpenEnv server" in first, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("signum", "status", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_ctrl_c_during_check_says_so_and_shows_the_verdicts_so_far(signum: int, status: int, said: str) -> None:
    with serve_process("cli_edge_envs:SlowSteps") as served, _started("check", served.url) as check:
        deadline = time.monotonic() + 60
        while sum("session_closed" in line for line in served.lines) < 3:  # a few cases are done
            assert time.monotonic() < deadline and check.poll() is None
            time.sleep(0.05)
        check.send_signal(signum)
        out, err = check.communicate(timeout=60)
    assert check.returncode == status
    assert said in err and "Traceback" not in err, err
    assert "PASS" in out, out  # the verdicts of the cases that finished


# --- docs -----------------------------------------------------------------------------------


def test_docs_check_from_another_folder(tmp_path: Path) -> None:
    inside = _run("docs", "--check", cwd=ROOT / "openenv_anyio")  # a folder of the project
    assert inside.returncode == 0, inside.stderr
    outside = _run("docs", "--check", cwd=tmp_path)  # no protocol/reference anywhere above
    line = _one_clean_line(outside)
    assert outside.returncode != 0 and "missing)" not in line and "--out" in line


def _watching_demo() -> tuple[subprocess.Popen[str], str]:
    """``demo --watch`` once its agents are done: the process and the server's URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openenv_anyio",
            "demo",
            "--watch",
            "--env",
            "cli_edge_envs:SlowClose",
            "--agents",
            "2",
            "--episodes",
            "1",
            "--max-steps",
            "20",
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=serve_environment(),
    )
    assert process.stderr is not None
    url = ""
    deadline = time.monotonic() + 120
    for line in process.stderr:
        assert time.monotonic() < deadline
        if line.startswith("dashboard: "):
            url = line.split()[1].removesuffix("/web/")
        if "stay up" in line:
            return process, url
    raise AssertionError(f"demo --watch ended early ({process.wait()})")


@pytest.mark.parametrize("gap_s", [0.1, 0.4])
def test_ctrl_c_twice_on_demo_watch_while_it_stops_ends_cleanly(gap_s: float) -> None:
    """A dashboard watching, one session ended and one still open, then Ctrl-C, and Ctrl-C
    again while the server is still closing the open session's environment: the second one
    used to be raised as KeyboardInterrupt in the middle of the shutdown (once it ended in
    trio.TrioInternalError); it is noted and the first one's clean stop goes on."""
    from websockets.sync.client import connect

    process, url = _watching_demo()
    try:
        ws = url.replace("http", "ws", 1)
        with connect(ws + "/ws/ui?dashboard=1") as dashboard, connect(ws + "/ws") as ended, connect(ws + "/ws") as kept:
            for session in (ended, kept):
                session.send(json.dumps({"type": "reset", "data": {}}))
                session.recv()
                session.send(json.dumps({"type": "step", "data": {"move": 1}}))
                session.recv()
            ended.send(json.dumps({"type": "close", "data": {}}))
            dashboard.recv()
            process.send_signal(signal.SIGINT)
            time.sleep(gap_s)  # the open session's close() takes a second
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr and "TrioInternalError" not in stderr, stderr[-3000:]
    assert process.returncode == 0, (process.returncode, stderr[-3000:])
    assert "stopping already" in stderr


def test_demo_against_a_server_that_is_not_openenv_says_so(tmp_path: Path) -> None:
    with _plain_web_server(tmp_path) as port:
        done = _run("demo", "--url", f"http://127.0.0.1:{port}", "--agents", "1", "--episodes", "1", "--no-progress")
    assert done.returncode == 1
    assert "is not an OpenEnv server" in _one_clean_line(done) and "<html" not in done.stdout.lower()


# --- Ctrl-C in the first instant --------------------------------------------------------------

#: moments after the start at which a SIGINT is sent: through the interpreter's start, the
#: imports and the command's own start (the commands take longer than the last on this machine)
EARLY_MOMENTS_S = [i * 0.015 for i in range(20)]


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "openenv_anyio.envs.echo:EchoEnv", "--port", "0"],
        ["check", "http://127.0.0.1:9"],
        ["demo", "--agents", "1", "--episodes", "1", "--no-progress"],
    ],
    ids=["serve", "check", "demo"],
)
def test_ctrl_c_in_the_first_instant_exits_quietly_with_130(command: list[str]) -> None:
    # the bytecode compiled once, as installing the package does (pip compiles it)
    assert _run(command[0], "--help").returncode == 0
    outcomes = []
    for moment in EARLY_MOMENTS_S:
        with _started(*command) as process:
            time.sleep(moment)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
        if "Traceback" in err and "openenv_anyio" not in err:
            # the interpreter's own start (its site module, runpy finding the package), before
            # any line of the project runs: nothing a program can change
            continue
        outcomes.append((moment, process.returncode, err))
        assert "Traceback" not in err and "panicked" not in err, (moment, err[-2000:])
        assert process.returncode in (130, -signal.SIGINT), (moment, process.returncode, err[-2000:])
        assert len([line for line in err.splitlines() if line.strip()]) <= 1 or "interrupted" in err, err
    assert len(outcomes) >= len(EARLY_MOMENTS_S) // 2, outcomes


# --- serve --reload --------------------------------------------------------------------------

RELOADED_ENV = """
class Versioned:
    NON_BLOCKING = True

    def reset(self, **kwargs):
        return {"version": VERSION, "reward": 0.0, "done": False}

    def step(self, action):
        return {"version": VERSION, "reward": 0.0, "done": True}

    @property
    def state(self):
        return {"episode_id": None, "step_count": 0}


VERSION = 1
"""


def _version(url: str) -> int | None:
    try:
        request = urllib.request.Request(url + "/reset", data=b"{}", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(json.load(response)["observation"]["version"])
    except OSError:
        return None  # between two servers


def test_serve_reload_serves_the_changed_environment_and_stops_cleanly(tmp_path: Path) -> None:
    import socket

    (tmp_path / "versioned.py").write_text(RELOADED_ENV, encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with _started("serve", "versioned:Versioned", "--port", str(port), "--reload", cwd=tmp_path) as watcher:
        deadline = time.monotonic() + 60
        while _version(url) != 1:
            assert time.monotonic() < deadline and watcher.poll() is None, "the first server never answered"
            time.sleep(0.1)
        source = tmp_path / "versioned.py"
        source.write_text(RELOADED_ENV.replace("VERSION = 1", "VERSION = 2"), encoding="utf-8")
        later = time.time() + 2  # a modification time the first snapshot cannot have
        os.utime(source, (later, later))
        while _version(url) != 2:
            assert time.monotonic() < deadline and watcher.poll() is None, "the changed environment was never served"
            time.sleep(0.1)
        watcher.send_signal(signal.SIGTERM)
        _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err[-3000:]
    assert "versioned.py changed: restarting" in err and "Traceback" not in err, err[-3000:]
    assert _version(url) is None  # the server went with the watcher


def test_serve_reload_with_workers_is_refused_in_one_line() -> None:
    line = _one_clean_line(_run("serve", "openenv_anyio.envs.echo:EchoEnv", "--reload", "--workers", "2"))
    assert "--reload" in line and "--workers" in line
