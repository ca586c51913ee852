"""Fault isolation: an environment's BaseException, a hung close(), a frame the server cannot
answer normally: each costs only its own session (or request), never the server."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from openenv_anyio.envs.echo import EchoEnv

from .aborting_envs import (
    ABORTS,
    AWKWARD,
    Aborting,
    AsyncAborting,
    AsyncHangingClose,
    Awkward,
    HangingClose,
    InlineAborting,
    exiting_factory,
)
from .conftest import TIMEOUT, ask, running, wait_for, ws_connect
from .test_sessions import closed_code

KINDS = {"thread": Aborting, "inline": InlineAborting, "async": AsyncAborting}


def _server_still_serves(server) -> None:
    with ws_connect(server) as ws:
        assert ask(ws, {"type": "reset"})["type"] == "observation"
        assert ask(ws, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("abort", sorted(ABORTS))
@pytest.mark.parametrize("where", ["reset", "step", "observation"])
def test_env_base_exception_ends_only_its_session(kind: str, abort: str, where: str) -> None:
    """SRV-FAULT-1: the request is answered with EXECUTION_ERROR naming the exception, the
    session closes with 1011, the other sessions and the server go on. ``observation``: the
    step's observation raises it when the server reads it (its ``model_dump``, env code on
    the loop's thread)."""
    with running(KINDS[kind]) as server, ws_connect(server) as bystander, ws_connect(server) as victim:
        ask(bystander, {"type": "reset"})
        ask(victim, {"type": "reset"})
        request = {
            "reset": {"type": "reset", "data": {"abort_in_reset": abort}},
            "step": {"type": "step", "data": {"abort": abort}},
            "observation": {"type": "step", "data": {"abort_in_observation": abort}},
        }[where]
        answer = ask(victim, request)
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert abort in answer["data"]["message"]
        code, reason = closed_code(victim)
        assert code == 1011 and "environment" in reason
        assert ask(bystander, {"type": "step", "data": {}})["data"]["observation"]["steps"] == 1
        _server_still_serves(server)
        wait_for(lambda: server.stats()["active_sessions"] == 1)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_env_base_exception_in_close_is_logged_not_fatal(kind: str) -> None:
    """SRV-FAULT-1: close() raising SystemExit ends nothing but that close."""
    with running(KINDS[kind]) as server:
        with ws_connect(server) as ws:
            ask(ws, {"type": "step", "data": {"abort_on_close": "SystemExit"}})
        wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
        _server_still_serves(server)


def test_factory_base_exception_is_factory_error() -> None:
    """SRV-FAULT-1 with WS-FACT-1: a factory calling sys.exit() fails its session only."""
    with running(exiting_factory) as server:
        for _ in range(2):
            with ws_connect(server) as ws:
                error = json.loads(ws.recv(timeout=TIMEOUT))
                assert error["data"]["code"] == "FACTORY_ERROR"
                assert "SystemExit" in error["data"]["message"]
                assert closed_code(ws)[0] == 1011
        wait_for(lambda: server.stats()["active_sessions"] == 0)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


#: orjson refuses more than 1024 levels (WS-CONN-5); anything up to that must be answered
DEPTHS = (969, 1022)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    "template",
    ['{"type":"step","data":%s}', '{"type":"reset","data":%s}', '{"type":"reset","data":{"seed":%s}}'],
)
def test_deeply_nested_frame_is_answered_not_fatal(template: str, depth: int) -> None:
    """WS-ERR-9: a small frame nested as deep as JSON allows is refused with an error frame;
    the session goes on."""
    with running(EchoEnv) as server, ws_connect(server) as ws:
        answer = ask(ws, template % _nested(depth))
        assert answer["type"] == "error" and answer["data"]["code"] == "VALIDATION_ERROR"
        assert (
            ask(ws, {"type": "step", "data": {"message": "still here"}})["data"]["observation"]["echoed"]
            == "still here"
        )


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    ("path", "template"),
    [("/reset", '{"seed":%s}'), ("/step", '{"action":{"message":%s}}')],
)
def test_deeply_nested_http_body_is_422_json(path: str, template: str, depth: int) -> None:
    """HTTP-4: the same frame over HTTP is a JSON 422, not an HTML 500."""
    with running(EchoEnv) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        response = client.post(path, content=template % _nested(depth), headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text[:200]
        assert response.json()["detail"]


@pytest.mark.parametrize("awkward", sorted(AWKWARD))
def test_exception_text_that_cannot_be_sent_as_is_still_gives_an_error_frame(awkward: str) -> None:
    """SRV-FAULT-2: the message is escaped or replaced, the session goes on."""
    with running(Awkward) as server, ws_connect(server) as ws:
        answer = ask(ws, {"type": "step", "data": {"raise": awkward}})
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert type(AWKWARD[awkward]).__name__ in answer["data"]["message"]
        assert ask(ws, {"type": "state"})["data"]["message"] == "ValueError: bad \\ud800 text"
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
            response = client.post("/step", json={"action": {"raise": awkward}})
            assert response.status_code == 500
            assert type(AWKWARD[awkward]).__name__ in response.json()["detail"]


@pytest.mark.parametrize("env", [HangingClose, AsyncHangingClose])
def test_hung_close_frees_the_slot_after_the_bound(env: type) -> None:
    """SRV-FAULT-3: a close() that never returns is waited for shutdown_grace_s only; a
    sync one is then recorded as stuck (its thread cannot be stopped), an async one is
    cancelled."""
    HangingClose.release.clear()
    try:
        with running(env, max_concurrent_envs=1, shutdown_grace_s=0.3) as server:
            for _ in range(3):
                with ws_connect(server) as ws:
                    assert ask(ws, {"type": "step", "data": {}})["type"] == "observation"
                wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
            assert len(server.stuck_envs()) == (3 if env is HangingClose else 0)
    finally:
        HangingClose.release.set()


def _metric(server, name: str) -> float:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        text = client.get("/metrics").text
    values = [line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")]
    assert values, f"{name} is not in /metrics"
    return float(values[0])


def _session_threads() -> list[threading.Thread]:
    """The threads of this process that run sessions' environment calls."""
    return [thread for thread in threading.enumerate() if thread.name.startswith("openenv-env-")]


def test_hung_closes_hold_a_bounded_number_of_threads_and_show_in_metrics() -> None:
    """SRV-FAULT-3: each close() that outlives the bound keeps its thread (threads cannot be
    stopped); at max_stuck_closes of them the server takes no new session (1013, as at
    capacity) until one returns, so hung closes cannot pile threads up without end. The
    count is on /metrics."""
    HangingClose.release.clear()
    try:
        with running(HangingClose, shutdown_grace_s=0.3, max_stuck_closes=2) as server:
            before = set(_session_threads())
            for _ in range(2):
                with ws_connect(server) as ws:
                    assert ask(ws, {"type": "step", "data": {}})["type"] == "observation"
                wait_for(lambda: server.stats()["live_envs"] == 0)
            assert len(server.stuck_envs()) == 2
            assert _metric(server, "openenv_env_closes_stuck") == 2
            for _ in range(3):
                with ws_connect(server) as ws:
                    refusal = json.loads(ws.recv(timeout=TIMEOUT))
                    assert refusal["data"]["code"] == "CAPACITY_REACHED"
                    assert "close()" in refusal["data"]["message"]
                    assert closed_code(ws)[0] == 1013
            # the two stuck closes, nothing for the refused (the test's own client threads, such
            # as a closed connection's keep-alive thread still ending, are not the server's)
            new_threads = [thread.name for thread in _session_threads() if thread not in before]
            assert len(new_threads) == 2, new_threads
            HangingClose.release.set()
            wait_for(lambda: not server.stuck_envs())
            assert _metric(server, "openenv_env_closes_stuck") == 0
            with ws_connect(server) as ws:
                assert ask(ws, {"type": "step", "data": {}})["type"] == "observation"
    finally:
        HangingClose.release.set()


def test_stuck_closes_make_the_server_not_ready_and_every_refusal_says_why() -> None:
    """SRV-FAULT-3, HTTP-7: while stuck closes refuse every new session, ``/ready`` says not
    ready (a balancer sends the work elsewhere) and each refusal (``/ws``, ``POST /step``,
    ``POST /mcp``'s session create) names the stuck closes, not an empty capacity ("0/None
    sessions": the server has no session limit and no session)."""
    HangingClose.release.clear()
    try:
        with running(HangingClose, shutdown_grace_s=0.3, max_stuck_closes=1) as server:
            with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
                assert http.get("/ready").json() == {"status": "ready"}
                with ws_connect(server) as ws:
                    assert ask(ws, {"type": "step", "data": {}})["type"] == "observation"
                wait_for(lambda: len(server.stuck_envs()) == 1)
                not_ready = http.get("/ready")
                assert not_ready.status_code == 503, not_ready.text
                assert not_ready.json()["status"] == "stuck_closes"
                with ws_connect(server) as ws:
                    refusals = [json.loads(ws.recv(timeout=TIMEOUT))["data"]["message"]]
                step = http.post("/step", json={"action": {}})
                assert step.status_code == 503
                refusals.append(step.json()["detail"])
                create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
                refusals.append(http.post("/mcp", json=create).json()["error"]["message"])
                for refusal in refusals:
                    assert "1 environment's close() still running" in refusal, refusal
                    assert "None" not in refusal and "0/" not in refusal, refusal
                HangingClose.release.set()
                wait_for(lambda: not server.stuck_envs())
                assert http.get("/ready").json() == {"status": "ready"}
    finally:
        HangingClose.release.set()
