"""The ``/ws/ui`` channel (PROTOCOL.md section 8)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio.core import decode_ui_frame
from openenv_anyio.envs.echo import EchoEnv

from .aborting_envs import DeepObservation
from .conftest import TIMEOUT, ask, running, wait_for, ws_connect
from .test_sessions import _raw_handshake


def update(ui, timeout: float = TIMEOUT) -> dict[str, Any]:
    text = ui.recv(timeout=timeout)
    decode_ui_frame(text)
    frame = json.loads(text)
    assert frame["type"] == "state_update"
    return frame["episode_state"]


@pytest.fixture(scope="module")
def server():
    with running(EchoEnv) as server:
        yield server


def test_nothing_is_sent_before_a_session_exists() -> None:
    """UI-2: no session, no update."""
    with running(EchoEnv) as server, ws_connect(server, "/ws/ui") as ui:
        with pytest.raises(TimeoutError):
            ui.recv(timeout=0.3)


def test_update_on_connect_and_after_reset_and_step(server) -> None:
    """UI-2, UI-3: on connect the current state, then one per reset and step."""
    with ws_connect(server) as ws:
        ask(ws, {"type": "reset", "data": {"episode_id": "ui-1"}})
        with ws_connect(server, "/ws/ui") as ui:
            first = update(ui)
            while first["episode_id"] != "ui-1":  # other sessions of this module's server
                first = update(ui)
            assert first["step_count"] == 0 and first["is_reset"] is True
            assert first["current_observation"] == {"echoed": "", "length": 0, "pad": ""}
            session_id = first["session_id"]
            ask(ws, {"type": "step", "data": {"message": "hey"}})
            after_step = update(ui)
            assert after_step["session_id"] == session_id
            assert after_step["step_count"] == 1 and after_step["is_reset"] is False
            (log,) = after_step["action_logs"]
            assert log["action"] == {"message": "hey"} and log["reward"] == 3.0 and log["step_count"] == 1
            ask(ws, {"type": "reset", "data": {"episode_id": "ui-2"}})
            after_reset = update(ui)
            assert after_reset["episode_id"] == "ui-2" and after_reset["action_logs"] == []


def test_session_filter_and_ignored_input(server) -> None:
    """UI-1 (frames from a subscriber are ignored), UI-3 (``?session=ID``)."""
    with ws_connect(server) as watched, ws_connect(server) as other, ws_connect(server, "/ws/ui") as everyone:
        ask(watched, {"type": "reset", "data": {"episode_id": "watched"}})
        ask(other, {"type": "reset", "data": {"episode_id": "other"}})
        ids: dict[str, str] = {}
        while len(ids) < 2:
            state = update(everyone)
            if state["episode_id"] in ("watched", "other"):
                ids[state["episode_id"]] = state["session_id"]
        with ws_connect(server, f"/ws/ui?session={ids['watched']}") as one:
            assert update(one)["session_id"] == ids["watched"]
            one.send("ignored")
            one.send(b"\x00")
            ask(other, {"type": "step", "data": {"message": "o"}})
            ask(watched, {"type": "step", "data": {"message": "w"}})
            state = update(one)
            assert state["session_id"] == ids["watched"] and state["step_count"] == 1


def test_stuck_subscriber_never_slows_stepping() -> None:
    """UI-4: a subscriber that never reads while a client steps 1,000 times; a live subscriber
    still ends with the latest state."""
    with running(EchoEnv) as server:
        stuck = _raw_handshake(server.url, "/ws/ui")
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            with ws_connect(server) as ws, ws_connect(server, "/ws/ui") as live:
                ask(ws, {"type": "reset"})
                start = time.monotonic()
                for index in range(1000):
                    answer = ask(ws, {"type": "step", "data": {"message": "m", "pad": 2000}})
                    assert answer["type"] == "observation", index
                # a hang bound, not a speed check: a blocking subscriber would stall this forever
                assert time.monotonic() - start < 60
                state = update(live)
                while state["step_count"] < 1000:
                    state = update(live)
                assert state["step_count"] == 1000
                assert len(state["action_logs"]) <= 50
        finally:
            stuck.close()


def test_half_open_subscriber_is_dropped_within_ping_timeout() -> None:
    """UI-4, WS-PING-1: a subscriber that vanished without a close is dropped."""
    with running(EchoEnv, ping_interval_s=0.2, ping_timeout_s=0.4) as server:
        sock = _raw_handshake(server.url, "/ws/ui")
        try:
            wait_for(lambda: server.stats()["connections"] == 1)
            assert wait_for(lambda: server.stats()["connections"] == 0) < 0.2 + 0.4 + 5
        finally:
            sock.close()


def test_subscriber_that_stops_reading_is_dropped_after_send_timeout() -> None:
    """UI-4: a subscriber whose socket takes no data is dropped; stepping never waits."""
    with running(EchoEnv, send_timeout_s=0.5) as server:
        stuck = _raw_handshake(server.url, "/ws/ui")
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            with ws_connect(server) as ws:
                ask(ws, {"type": "reset"})
                wait_for(lambda: server.stats()["connections"] == 2)
                steps = 0
                while server.stats()["connections"] == 2:
                    assert ask(ws, {"type": "step", "data": {"message": "m", "pad": 100_000}})["type"] == "observation"
                    steps += 1
                    assert steps < 5000, "the stuck subscriber was never dropped"
                assert server.stats() == {"active_sessions": 1, "live_envs": 1, "connections": 1}
        finally:
            stuck.close()


def test_an_unencodable_update_costs_only_itself() -> None:
    """UI-5: a session's update that cannot be encoded (its action log nests deeper than
    the encoder goes) is counted and goes without the entry that failed; every subscriber
    stays connected and gets the next update, new subscribers too."""
    with running(DeepObservation) as server, ws_connect(server) as ws, ws_connect(server, "/ws/ui") as ui:
        ask(ws, {"type": "reset"})
        while update(ui)["is_reset"] is not True:  # the view on connect, then the reset's
            pass
        answer = ask(ws, {"type": "step", "data": {"depth": 250}})
        assert answer["type"] == "observation"
        ask(ws, {"type": "step", "data": {"depth": 2}})
        while update(ui)["current_observation"] != {"deep": [[]]}:  # the deep one may come first, its log entry dropped
            pass
        assert server.ui_stats()["unencodable_updates"] >= 1
        ask(ws, {"type": "step", "data": {"depth": 250}})
        with ws_connect(server, "/ws/ui") as late:
            ask(ws, {"type": "step", "data": {"depth": 3}})
            state = update(late)
            while state["current_observation"] != {"deep": [[[]]]}:
                state = update(late)
        while update(ui)["current_observation"] != {"deep": [[[]]]}:
            pass


def test_subscribers_beyond_the_cap_are_refused_with_1013() -> None:
    """UI-6: --max-ui-subscribers; the ones beyond it are closed with 1013 at once."""
    with running(EchoEnv, max_ui_subscribers=2) as server:
        with ws_connect(server, "/ws/ui"), ws_connect(server, "/ws/ui"):  # the two the cap allows
            with ws_connect(server, "/ws/ui") as three:
                with pytest.raises(ConnectionClosed) as closed:
                    three.recv(timeout=TIMEOUT)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            wait_for(lambda: server.ui_stats()["subscribers"] == 2)
        wait_for(lambda: server.ui_stats()["subscribers"] == 0)
        with ws_connect(server, "/ws/ui"), ws_connect(server) as ws:
            ask(ws, {"type": "reset"})
