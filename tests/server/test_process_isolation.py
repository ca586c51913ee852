"""``--isolate process`` (SRV-ISO-*): each session's environment in a process of its own, on a
real server with real processes. A segfault, ``os._exit``, ``sys.exit()`` or a busy loop in
environment code ends only its session (its client is told); the server and every other
session go on, and no process is left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from serve_process import serve_process
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.server.isolation import ProcessIsolated
from tests.ops.scrape import scrape

from .conftest import TIMEOUT, ask, running, wait_for, ws_connect
from .isolated_envs import AsyncCrashing, Crashing, CrashingFactory, RaisingFactory
from .test_sessions import closed_code

#: how each fault ends its session: (words the error message holds, close code)
ENDINGS = {
    "segfault": ("killed by SIGSEGV", 4410),
    "sigsegv": ("killed by SIGSEGV", 4410),
    "os_exit": ("exited with status 3", 4410),
    "sys_exit": ("SystemExit", 1011),  # SRV-FAULT-1: raised, caught in the process, which lives on until closed
}
KINDS = {"sync": Crashing, "async": AsyncCrashing}
#: how long a process may take to import openenv-core (seconds on a loaded machine)
SLOW_IMPORT_TIMEOUT = 180.0


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (read from /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children_of(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("fault", sorted(ENDINGS))
def test_a_crash_in_a_step_ends_only_its_session(kind: str, fault: str) -> None:
    """SRV-ISO-2: the step is answered with EXECUTION_ERROR saying what happened, the session
    closes (4410 when the process died), its process is gone; a second session keeps
    stepping and the server serves new ones."""
    words, close = ENDINGS[fault]
    with (
        running(KINDS[kind], isolate="process") as server,
        ws_connect(server) as bystander,
        ws_connect(server) as victim,
    ):
        bystander_pid = ask(bystander, {"type": "reset"})["data"]["observation"]["pid"]
        victim_pid = ask(victim, {"type": "reset"})["data"]["observation"]["pid"]
        assert len({bystander_pid, victim_pid, os.getpid()}) == 3, "one process per session, none of them the server"
        assert ask(victim, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1
        answer = ask(victim, {"type": "step", "data": {"crash": fault}})
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert words in answer["data"]["message"]
        code, _ = closed_code(victim)
        assert code == close
        wait_for(lambda: not alive(victim_pid))
        for expected in (1, 2, 3):
            assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == expected
        with ws_connect(server) as newcomer:
            assert ask(newcomer, {"type": "reset"})["data"]["observation"]["pid"] not in (victim_pid, bystander_pid)
        wait_for(lambda: server.stats()["active_sessions"] == 1)
        assert alive(bystander_pid)


@pytest.mark.parametrize("fault", ["segfault", "os_exit"])
def test_a_crash_in_reset_ends_only_its_session(fault: str) -> None:
    """SRV-ISO-2 in reset: the same answer, the same close."""
    words, close = ENDINGS[fault]
    with running(Crashing, isolate="process") as server, ws_connect(server) as bystander, ws_connect(server) as victim:
        ask(bystander, {"type": "reset"})
        answer = ask(victim, {"type": "reset", "data": {"crash": fault}})
        assert answer["data"]["code"] == "EXECUTION_ERROR" and words in answer["data"]["message"]
        assert closed_code(victim)[0] == close
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1


def test_a_busy_loop_is_stopped_by_the_step_timeout() -> None:
    """SRV-ISO-3: a step that never returns is answered once the step timeout runs out, its
    process is killed, the session closes with 4410; the other session steps meanwhile."""
    with (
        running(Crashing, isolate="process", step_timeout_s=1.0) as server,
        ws_connect(server) as bystander,
        ws_connect(server) as victim,
    ):
        ask(bystander, {"type": "reset"})
        victim_pid = ask(victim, {"type": "reset"})["data"]["observation"]["pid"]
        victim.send(json.dumps({"type": "step", "data": {"crash": "busy_loop"}}))
        for expected in (1, 2, 3):  # the spinning process takes nothing from this session
            assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == expected
        answer = json.loads(victim.recv(timeout=TIMEOUT))
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert "step timeout (1 s)" in answer["data"]["message"]
        assert closed_code(victim)[0] == 4410
        wait_for(lambda: not alive(victim_pid))
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 4


def test_a_step_within_the_timeout_is_answered() -> None:
    """SRV-ISO-3: the timeout bounds each call, not the session."""
    with running(Crashing, isolate="process", step_timeout_s=5.0) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        for expected in (1, 2):
            assert ask(ws, {"type": "step", "data": {"sleep": 0.2}})["data"]["observation"]["steps"] == expected


def test_an_exception_is_an_execution_error_and_the_session_goes_on() -> None:
    """WS-ERR-7 across the process boundary: the type and text of the exception come back;
    the environment (and its process) keep their state."""
    with running(Crashing, isolate="process") as server, ws_connect(server) as ws:
        pid = ask(ws, {"type": "reset"})["data"]["observation"]["pid"]
        ask(ws, {"type": "step", "data": {}})
        answer = ask(ws, {"type": "step", "data": {"crash": "raise"}})
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert answer["data"]["message"] == "ValueError: the action asked for an error"
        observation = ask(ws, {"type": "step", "data": {}})["data"]["observation"]
        assert observation == {"steps": 2, "pid": pid}
        assert ask(ws, {"type": "state"})["data"] == {"episode_id": "episode", "step_count": 2, "pid": pid}


def test_an_invalid_action_is_refused_by_the_server() -> None:
    """WS-STEP-2: the schema the process declared is enforced before the request leaves."""
    with running(Crashing, isolate="process") as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        answer = ask(ws, {"type": "step", "data": {"crash": "nonsense"}})
        assert answer["data"]["code"] == "VALIDATION_ERROR"
        assert answer["data"]["errors"][0]["pointer"] == "/data/crash"
        assert ask(ws, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1


def test_an_openenv_core_environment_runs_isolated_through_the_adapter() -> None:
    """SRV-ISO-1 with an openenv-core environment: its action model is built in its own
    process, and its segfault ends only its session."""
    with (
        running(ProcessIsolated("server.isolated_core_envs:CoreCrashing"), isolate="process") as server,
        # no pings: a session's connection is not read while its environment is built (slowly, here)
        ws_connect(server, ping_interval=None) as bystander,
        ws_connect(server, ping_interval=None) as victim,
    ):
        for ws in (bystander, victim):  # each process imports openenv-core first: slow on a busy machine
            ws.send(json.dumps({"type": "reset"}))
            assert json.loads(ws.recv(timeout=SLOW_IMPORT_TIMEOUT))["type"] == "observation"
        assert ask(victim, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1
        answer = ask(victim, {"type": "step", "data": {"crash": "segfault"}})
        assert "killed by SIGSEGV" in answer["data"]["message"]
        assert closed_code(victim)[0] == 4410
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1


@pytest.mark.parametrize(
    ("factory", "words"),
    [(CrashingFactory, "killed by SIGSEGV"), (RaisingFactory, "FileNotFoundError: model weights not found")],
)
def test_a_factory_that_fails_in_its_process_is_a_factory_error(factory: type, words: str) -> None:
    """WS-FACT-1: FACTORY_ERROR then 1011, as in a thread; the server goes on."""
    with running(factory, isolate="process") as server:
        with ws_connect(server) as ws:
            error = json.loads(ws.recv(timeout=TIMEOUT))
            assert error["data"]["code"] == "FACTORY_ERROR" and words in error["data"]["message"]
            assert closed_code(ws)[0] == 1011
        wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})


def test_http_routes_metadata_and_schema_use_isolated_environments() -> None:
    """HTTP-*: the stateless routes and the descriptions work the same way."""
    with running(Crashing, isolate="process") as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        assert client.get("/metadata").json()["name"] == "Crashing"
        assert client.get("/schema").json()["action"]["properties"]["crash"]["enum"]
        body = client.post("/step", json={"action": {}}).json()
        assert body["observation"]["steps"] == 1 and body["observation"]["pid"] != os.getpid()


@pytest.mark.parametrize(
    ("target", "way"),
    [
        ("tests.session_store.keeping_envs:AsyncBoard", "snapshot"),
        ("tests.session_store.keeping_envs:Counter", "replay"),
        (Crashing, "none"),
    ],
)
def test_metadata_says_how_an_isolated_environment_comes_back(target: object, way: str) -> None:
    """HTTP-2: ``restore`` is what the environment's own process found it offers."""
    isolated = ProcessIsolated(target) if isinstance(target, str) else target
    with running(isolated, isolate="process") as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        assert client.get("/metadata").json()["restore"] == way


def test_server_shutdown_leaves_no_process_behind() -> None:
    """SRV-ISO-4: open sessions (one mid-step) are closed and their processes reaped."""
    with contextlib.ExitStack() as connections:  # closed after the server stopped
        with running(Crashing, isolate="process", drain_timeout_s=0.5) as server:
            sockets = [connections.enter_context(ws_connect(server)) for _ in range(3)]
            pids = [ask(ws, {"type": "reset"})["data"]["observation"]["pid"] for ws in sockets]
            sockets[0].send(json.dumps({"type": "step", "data": {"sleep": 30}}))
            assert all(alive(pid) for pid in pids)
        assert not [pid for pid in pids if alive(pid)]


def test_an_unimportable_factory_is_refused_at_once() -> None:
    """SRV-ISO-1: a factory another process cannot import by name is a one-line ValueError."""
    with pytest.raises(ValueError, match="needs an environment another process can import"):
        with running(lambda: Crashing(), isolate="process"):
            pass


def test_step_timeout_needs_process_isolation() -> None:
    from openenv_anyio.server import ServerConfig

    with pytest.raises(ValueError, match="needs process isolation"):
        ServerConfig(step_timeout_s=1.0)


def _connect(url: str) -> ClientConnection:
    return connect(url, open_timeout=TIMEOUT, close_timeout=TIMEOUT)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_isolate_process_stops_cleanly(signum: int) -> None:
    """SRV-ISO-4 through the CLI: SIGTERM or SIGINT (Ctrl-C reaches every process of the
    terminal's group: the environments' processes ignore it and are ended by the server)
    drains, closes every session, exits 0 and leaves no process behind."""
    with (
        serve_process("server.isolated_envs:Crashing", "--isolate", "process") as served,
        _connect(served.ws_url) as first,
        _connect(served.ws_url) as second,
    ):
        pids = [ask(ws, {"type": "reset"})["data"]["observation"]["pid"] for ws in (first, second)]
        descendants = children_of(served.process.pid)
        assert set(pids) <= descendants
        if signum == signal.SIGINT:
            for pid in descendants:
                os.kill(pid, signal.SIGINT)
            assert ask(first, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1
        assert served.stop(signum) == 0
        wait_for(lambda: not any(alive(pid) for pid in descendants))


def test_environment_processes_end_when_the_server_is_killed() -> None:
    """SRV-ISO-4: no orphans: a server killed with SIGKILL (no clean-up at all) takes its
    environments' processes with it, even one busy in environment code."""
    with (
        serve_process("server.isolated_envs:Crashing", "--isolate", "process") as served,
        _connect(served.ws_url) as idle,
        _connect(served.ws_url) as busy,
    ):
        pids = [ask(ws, {"type": "reset"})["data"]["observation"]["pid"] for ws in (idle, busy)]
        busy.send(json.dumps({"type": "step", "data": {"crash": "busy_loop"}}))
        descendants = children_of(served.process.pid)
        assert set(pids) <= descendants
        served.process.kill()
        served.process.wait()
        wait_for(lambda: not any(alive(pid) for pid in descendants))


def test_a_killed_server_takes_an_environment_holding_the_gil_with_it() -> None:
    """SRV-ISO-4: the environment's process is busy in one C call that never releases the
    GIL (no Python thread of that process runs again), and the server is SIGKILLed: the
    environment's process, the fork server and the resource tracker all end all the same."""
    with (
        serve_process("server.isolated_envs:Crashing", "--isolate", "process") as served,
        _connect(served.ws_url) as busy,
    ):
        pid = ask(busy, {"type": "reset"})["data"]["observation"]["pid"]
        busy.send(json.dumps({"type": "step", "data": {"crash": "gil_held"}}))
        descendants = children_of(served.process.pid)
        assert pid in descendants and len(descendants) >= 3  # fork server, resource tracker, env
        served.process.kill()
        served.process.wait()
        wait_for(lambda: not any(alive(pid) for pid in descendants), timeout=30)


def test_serve_help_explains_the_trade_off() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "serve", "--help"], capture_output=True, text=True, check=True
    )
    text = " ".join(result.stdout.split())
    assert "--isolate {thread,process}" in text and "--step-timeout S" in text
    assert "takes the whole server" in text and "ends only that session" in text


def test_workers_and_process_isolation_combine() -> None:
    """SRV-ISO-2 under ``--workers 2``: each worker forks its sessions' processes; a crash
    in one session leaves the other stepping."""
    with (
        serve_process("server.isolated_envs:Crashing", "--isolate", "process", "--workers", "2") as served,
        _connect(served.ws_url) as victim,
        _connect(served.ws_url) as bystander,
    ):
        pids = [ask(ws, {"type": "reset"})["data"]["observation"]["pid"] for ws in (victim, bystander)]
        assert set(pids) <= children_of(served.process.pid)
        answer = ask(victim, {"type": "step", "data": {"crash": "segfault"}})
        assert "killed by SIGSEGV" in answer["data"]["message"]
        assert closed_code(victim)[0] == 4410
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1


def test_a_process_killed_while_its_session_is_idle_ends_the_session_at_once(caplog: pytest.LogCaptureFixture) -> None:
    """SRV-ISO-2 between requests: a process that dies while its session waits for the
    client's next frame ends the session then, not at that next frame: closed with 4410
    whose reason says how, a log line, the close counted; the other session goes on."""
    with running(Crashing, isolate="process") as server, ws_connect(server) as bystander, ws_connect(server) as victim:
        ask(bystander, {"type": "reset"})
        victim_pid = ask(victim, {"type": "reset"})["data"]["observation"]["pid"]
        with caplog.at_level("ERROR", logger="openenv_anyio.server"):
            os.kill(victim_pid, signal.SIGKILL)
            code, reason = closed_code(victim)  # the client sent nothing: the server closed on its own
            assert code == 4410 and "killed by SIGKILL" in reason, (code, reason)
        assert any(
            "killed by SIGKILL" in record.getMessage() and "idle" in record.getMessage() for record in caplog.records
        )
        assert scrape(server.url).value("openenv_sessions_closed_total", code="4410") == 1
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1
        wait_for(lambda: server.stats()["active_sessions"] == 1)
