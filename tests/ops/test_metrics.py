"""``GET /metrics``: exact counts after a known sequence of sessions, steps and errors,
read with prometheus-client's parser."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from openenv_anyio.core import RESUME_TOKEN_HEADER, SUBPROTOCOL, CloseCode, ErrorCode
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import RunningServer
from tests.server.conftest import TIMEOUT, ask, running, wait_for, ws_connect
from tests.server.envs import Tracked

from .scrape import scrape


def closed_code(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


def negotiated(server: RunningServer, token: str | None = None) -> ClientConnection:
    return ws_connect(
        server,
        subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
        additional_headers={RESUME_TOKEN_HEADER: token} if token else None,
    )


def settled(server: RunningServer) -> bool:
    stats = server.stats()
    return stats["active_sessions"] == 0 and stats["connections"] == 0 and stats["live_envs"] == 0


def test_counts_are_exact_after_a_known_sequence() -> None:
    with running(Tracked, max_concurrent_envs=2) as server:
        before = scrape(server.url)
        assert before.value("openenv_sessions_capacity") == 2
        assert before.value("openenv_sessions_active") == 0
        assert before.value("openenv_steps_total") == 0
        assert before.types["openenv_step_duration_seconds"] == "histogram"

        # A: reset, 3 steps, a failing step, invalid JSON, an unknown type, state, close
        with ws_connect(server) as a:
            assert ask(a, {"type": "reset"})["type"] == "observation"
            for _ in range(3):
                assert ask(a, {"type": "step", "data": {}})["type"] == "observation"
            assert ask(a, {"type": "step", "data": {"raise": "boom"}})["data"]["code"] == "EXECUTION_ERROR"
            assert ask(a, "{not json")["data"]["code"] == "INVALID_JSON"
            assert ask(a, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
            assert ask(a, {"type": "state"})["type"] == "state"
            a.send(json.dumps({"type": "close"}))
            assert closed_code(a) == 1000
        # B and C fill the server; D is refused; B and C leave with a client close
        with ws_connect(server) as b, ws_connect(server) as c:
            ask(b, {"type": "reset"})
            ask(c, {"type": "state"})
            assert scrape(server.url).value("openenv_sessions_active") == 2
            with ws_connect(server) as d:
                refusal = json.loads(d.recv(timeout=TIMEOUT))
                assert refusal["data"]["code"] == "CAPACITY_REACHED"
                assert closed_code(d) == 1013
        # E (resume extension): a step, its replay, a dropped connection, a resume, a replay
        with negotiated(server) as e:
            token = json.loads(e.recv(timeout=TIMEOUT))["data"]["resume_token"]
            ask(e, {"type": "reset", "request_id": "r1"})
            first = ask(e, {"type": "step", "data": {}, "request_id": "s1"})
            assert ask(e, {"type": "step", "data": {}, "request_id": "s1"}) == first
            e.socket.shutdown(socket.SHUT_RDWR)
            e.close_socket()
        wait_for(lambda: scrape(server.url).labelled("openenv_sessions_closed_total", "code").get("1006") == 1)
        with negotiated(server, token) as resumed:
            assert json.loads(resumed.recv(timeout=TIMEOUT))["data"]["resumed"] is True
            assert ask(resumed, {"type": "step", "data": {}, "request_id": "s1"}) == first
            resumed.send(json.dumps({"type": "close"}))
            assert closed_code(resumed) == 1000
        wait_for(lambda: settled(server))

        after = scrape(server.url)
        assert after.value("openenv_steps_total") == 4
        assert after.value("openenv_resets_total") == 3
        assert after.value("openenv_resumes_total") == 1
        assert after.value("openenv_request_replays_total") == 2
        errors = {code: count for code, count in after.labelled("openenv_errors_total", "code").items() if count}
        assert errors == {"EXECUTION_ERROR": 1, "INVALID_JSON": 1, "UNKNOWN_TYPE": 1, "CAPACITY_REACHED": 1}
        assert set(after.labelled("openenv_errors_total", "code")) == {code.value for code in ErrorCode}
        # A 1000 (close frame), B and C 1000 (client's close), D 1013, E 1006 (dropped), E again 1000
        closed = {
            code: count for code, count in after.labelled("openenv_sessions_closed_total", "code").items() if count
        }
        assert closed == {"1000": 4, "1013": 1, "1006": 1}
        assert {str(int(code)) for code in CloseCode} <= after.labelled("openenv_sessions_closed_total", "code").keys()
        assert after.value("openenv_sessions_active") == 0
        assert after.value("openenv_step_duration_seconds_count") == 4
        assert after.value("openenv_request_duration_seconds_count", type="step") == 7
        assert after.value("openenv_request_duration_seconds_count", type="reset") == 3
        assert after.value("openenv_request_duration_seconds_count", type="state") == 2
        assert after.value("openenv_handshake_duration_seconds_count") == 5  # A, B, C, E, E resumed
        bucket = after.value("openenv_step_duration_seconds_bucket", le="+Inf")
        assert bucket == 4 and after.value("openenv_step_duration_seconds_sum") > 0


def test_ui_subscribers_and_dropped_frames_add_up() -> None:
    """Every state_update a subscriber should get is either received or counted as dropped."""
    steps = 200
    with running(EchoEnv) as server, ws_connect(server, "/ws/ui") as ui:
        wait_for(lambda: scrape(server.url).value("openenv_ui_subscribers") == 1)
        with ws_connect(server) as agent:
            ask(agent, {"type": "reset"})
            for n in range(steps):
                agent.send(json.dumps({"type": "step", "data": {"message": str(n)}}))
            for _ in range(steps):
                agent.recv(timeout=TIMEOUT)
            received, step_count = 0, -1
            while step_count != steps:
                step_count = json.loads(ui.recv(timeout=TIMEOUT))["episode_state"]["step_count"]
                received += 1
            dropped = scrape(server.url).value("openenv_ui_frames_dropped_total")
            assert received + dropped == steps + 1  # the reset's update and one per step


def test_metrics_off() -> None:
    with running(EchoEnv, metrics=False) as server:
        assert httpx.get(server.url + "/metrics", timeout=10).status_code == 404
        with ws_connect(server) as ws:
            assert ask(ws, {"type": "reset"})["type"] == "observation"
