"""The server's side of the resume extension, driven with raw frames (websockets' sync
client, an implementation independent of ours): negotiation, session frame, resume,
takeover, grace period, capacity, episode checks (PROTOCOL.md section 10)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.core import RESUME_TOKEN_HEADER, SUBPROTOCOL, decode_server_frame
from openenv_anyio.server.env_server import RunningServer

from .envs import StepCounter

TIMEOUT = 10.0


def open_ws(server: RunningServer, *, negotiate: bool = True, token: str | None = None) -> ClientConnection:
    url = "ws" + server.url.removeprefix("http") + "/ws"
    headers = {RESUME_TOKEN_HEADER: token} if token is not None else None
    return connect(
        url,
        subprotocols=[SUBPROTOCOL] if negotiate else None,  # type: ignore[list-item]
        additional_headers=headers,
        open_timeout=TIMEOUT,
        close_timeout=TIMEOUT,
    )


def receive(ws: ClientConnection) -> dict[str, Any]:
    text = ws.recv(timeout=TIMEOUT)
    assert isinstance(text, str)
    decode_server_frame(text)  # every frame the server sends matches the spec
    return json.loads(text)


def ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    return receive(ws)


def drop(ws: ClientConnection) -> None:
    """End the TCP connection without a WebSocket close (a network failure)."""
    ws.socket.shutdown(socket.SHUT_RDWR)
    ws.close_socket()


def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def closed_with(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


def test_negotiated_connection_opens_with_a_session_frame(server: RunningServer) -> None:
    """EXT-NEG-1, EXT-SES-1, EXT-SES-2: the subprotocol is selected and the first frame is
    the session frame with an unguessable token."""
    with open_ws(server) as ws:
        assert ws.subprotocol == SUBPROTOCOL
        session = receive(ws)["data"]
        assert session["resumed"] is False and session["last_request_id"] is None
        assert session["resume_grace_s"] == 60.0
        session_id, _, secret = session["resume_token"].partition(".")
        assert session_id == session["session_id"] and len(secret) >= 43


def test_base_connections_see_the_base_protocol(server: RunningServer) -> None:
    """EXT-NEG-2: no subprotocol, no session frame, no request_id echoed."""
    with open_ws(server, negotiate=False) as ws:
        assert ws.subprotocol is None
        reply = ask(ws, {"type": "reset", "request_id": "1"})
        assert reply["type"] == "observation" and "request_id" not in reply and "episode_id" not in reply


def test_a_repeated_request_id_is_answered_from_the_ledger(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-REQ-1, EXT-REQ-2: the same request_id again gets the same answer; the env ran once."""
    with open_ws(server) as ws:
        receive(ws)
        reset = ask(ws, {"type": "reset", "request_id": "r1", "data": {"episode_id": "ep"}})
        assert reset["request_id"] == "r1" and reset["episode_id"] == "ep"
        first = ask(ws, {"type": "step", "data": {"n": 1}, "request_id": "s1"})
        again = ask(ws, {"type": "step", "data": {"n": 1}, "request_id": "s1"})
        assert first == again and first["request_id"] == "s1"
        assert counter.instances[0].steps == 1
        assert ask(ws, {"type": "step", "data": {"n": 2}, "request_id": "s2"})["data"]["observation"]["steps"] == 2


def test_resume_after_a_drop_continues_the_same_session(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-RES-1, EXT-RES-2: a dropped connection's session is resumed with its token; the
    answer lost with the connection is replayed, not re-run."""
    with open_ws(server) as ws:
        session = receive(ws)["data"]
        ask(ws, {"type": "reset", "request_id": "1", "data": {"episode_id": "kept"}})
        ws.send(json.dumps({"type": "step", "data": {"n": 1}, "request_id": "2"}))
        wait_for(lambda: counter.instances[0].steps == 1)
        drop(ws)  # the answer to request 2 is lost
    with open_ws(server, token=session["resume_token"]) as resumed:
        greeting = receive(resumed)["data"]
        assert greeting["resumed"] is True and greeting["session_id"] == session["session_id"]
        assert greeting["last_request_id"] == "2" and greeting["episode_id"] == "kept"
        replay = ask(resumed, {"type": "step", "data": {"n": 1}, "request_id": "2"})
        assert replay["data"]["observation"]["steps"] == 1 and replay["request_id"] == "2"
        assert ask(resumed, {"type": "state"})["data"] == {"episode_id": "kept", "step_count": 1}
    assert len(counter.instances) == 1


def test_close_ends_a_session_at_once(server: RunningServer) -> None:
    """EXT-RES-2: close is not a drop: the session ends now and cannot be resumed."""
    with open_ws(server) as ws:
        token = receive(ws)["data"]["resume_token"]
        ws.send(json.dumps({"type": "close"}))
        assert closed_with(ws) == 1000
    wait_for(lambda: server.stats()["live_envs"] == 0)
    with open_ws(server, token=token) as again:
        assert receive(again)["data"]["code"] == "SESSION_NOT_FOUND"


@pytest.mark.server_config(resume_grace_s=0.3)
def test_after_the_grace_period_the_session_is_gone(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-RES-2, EXT-RES-4: unclaimed for resume_grace_s, the session ends (env closed, slot
    freed); its token then gets SESSION_NOT_FOUND and close 4404."""
    with open_ws(server) as ws:
        token = receive(ws)["data"]["resume_token"]
        drop(ws)
    started = time.monotonic()
    wait_for(lambda: server.stats()["active_sessions"] == 0)
    assert time.monotonic() - started >= 0.3 * 0.9
    assert counter.instances[0].closed
    with open_ws(server, token=token) as late:
        error = receive(late)
        assert error["type"] == "error" and error["data"]["code"] == "SESSION_NOT_FOUND"
        assert closed_with(late) == 4404


def test_a_wrong_token_touches_no_session(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-RES-4, EXT-SES-2: a token with a real session id but a wrong secret (and garbage)
    gets SESSION_NOT_FOUND; the real session carries on untouched."""
    with open_ws(server) as owner:
        token = receive(owner)["data"]["resume_token"]
        ask(owner, {"type": "reset", "request_id": "1"})
        ask(owner, {"type": "step", "data": {}, "request_id": "2"})
        session_id = token.partition(".")[0]
        for wrong in (f"{session_id}.{'A' * 43}", "garbage", token + "x"):
            with open_ws(server, token=wrong) as intruder:
                assert receive(intruder)["data"]["code"] == "SESSION_NOT_FOUND"
                assert closed_with(intruder) == 4404
        assert ask(owner, {"type": "step", "data": {}, "request_id": "3"})["data"]["observation"]["steps"] == 2
        assert len(counter.instances) == 1


def test_takeover_of_a_half_open_connection(server: RunningServer) -> None:
    """EXT-RES-5: the token presented while the earlier connection still looks open: the new
    connection gets the session, the earlier one is closed with 4409."""
    with open_ws(server) as old:
        token = receive(old)["data"]["resume_token"]
        ask(old, {"type": "reset", "request_id": "1", "data": {"episode_id": "e"}})
        ask(old, {"type": "step", "data": {}, "request_id": "2"})
        with open_ws(server, token=token) as new:
            assert receive(new)["data"]["resumed"] is True
            assert closed_with(old) == 4409
            assert ask(new, {"type": "step", "data": {}, "request_id": "3"})["data"]["observation"]["steps"] == 2
            drop(new)
    # the new connection was lost: its session is kept for resuming
    wait_for(lambda: server.stats()["live_envs"] == 1)
    assert server.stats()["active_sessions"] == 1


def test_an_episode_mismatch_changes_nothing(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-EP-1: a step naming another episode gets EPISODE_MISMATCH; the env never sees it."""
    with open_ws(server) as ws:
        receive(ws)
        ask(ws, {"type": "reset", "request_id": "1", "data": {"episode_id": "current"}})
        refused = ask(ws, {"type": "step", "data": {}, "request_id": "2", "episode_id": "stale"})
        assert refused["type"] == "error" and refused["data"]["code"] == "EPISODE_MISMATCH"
        assert refused["request_id"] == "2"
        assert counter.instances[0].steps == 0
        accepted = ask(ws, {"type": "step", "data": {}, "request_id": "3", "episode_id": "current"})
        assert accepted["data"]["observation"]["steps"] == 1


@pytest.mark.server_config(max_concurrent_envs=1)
def test_a_session_in_its_grace_period_holds_its_slot(server: RunningServer) -> None:
    """EXT-RES-3: while kept for resuming, a session counts toward max_concurrent_envs."""
    with open_ws(server) as ws:
        token = receive(ws)["data"]["resume_token"]
        drop(ws)
    with open_ws(server) as other:
        refusal = receive(other)
        assert refusal["data"]["code"] == "CAPACITY_REACHED"
    with open_ws(server, token=token) as resumed:
        assert receive(resumed)["data"]["resumed"] is True
        resumed.send(json.dumps({"type": "close"}))
        assert closed_with(resumed) == 1000
    wait_for(lambda: server.stats()["active_sessions"] == 0)


@pytest.mark.server_config(max_concurrent_envs=1)
@pytest.mark.parametrize("code", [1000, 1001])
def test_a_clean_websocket_close_ends_the_session_at_once(
    server: RunningServer, counter: type[StepCounter], code: int
) -> None:
    """EXT-RES-2, WS-CAP-2: a client closing the WebSocket with 1000 or 1001 says it is done:
    the session ends at once (no grace period) and its slot is free for the next session."""
    for _ in range(3):
        with open_ws(server) as ws:
            greeting = receive(ws)
            assert greeting["type"] == "session", greeting
            ask(ws, {"type": "reset", "request_id": "1"})
            ws.close(code)
    wait_for(lambda: server.stats()["live_envs"] == 0)
    assert all(env.closed for env in counter.instances)
    with open_ws(server, token=greeting["data"]["resume_token"]) as late:
        assert receive(late)["data"]["code"] == "SESSION_NOT_FOUND"


@pytest.mark.server_config(max_concurrent_envs=1)
def test_a_websocket_close_with_another_code_is_a_lost_link(server: RunningServer) -> None:
    """EXT-RES-2: any other close code (here 1011, a client-side failure) keeps the session for
    resuming, holding its slot (EXT-RES-3)."""
    with open_ws(server) as ws:
        token = receive(ws)["data"]["resume_token"]
        ask(ws, {"type": "reset", "request_id": "1", "data": {"episode_id": "kept"}})
        ws.close(1011)
    with open_ws(server) as other:
        assert receive(other)["data"]["code"] == "CAPACITY_REACHED"
    with open_ws(server, token=token) as resumed:
        greeting = receive(resumed)["data"]
        assert greeting["resumed"] is True and greeting["episode_id"] == "kept"


def test_a_request_id_reused_with_another_body_is_refused(server: RunningServer, counter: type[StepCounter]) -> None:
    """EXT-REQ-3: the last request_id again with a different request is not replayed: it gets
    REQUEST_ID_REUSED and nothing runs; the same request again is still replayed."""
    with open_ws(server) as ws:
        receive(ws)
        ask(ws, {"type": "reset", "request_id": "1"})
        first = ask(ws, {"type": "step", "data": {"n": 1}, "request_id": "2"})
        reused = ask(ws, {"type": "step", "data": {"n": 2}, "request_id": "2"})
        assert reused["type"] == "error" and reused["data"]["code"] == "REQUEST_ID_REUSED"
        assert reused["request_id"] == "2"
        as_reset = ask(ws, {"type": "reset", "request_id": "2"})
        assert as_reset["data"]["code"] == "REQUEST_ID_REUSED"
        assert ask(ws, {"type": "step", "data": {"n": 1}, "request_id": "2"}) == first
        assert counter.instances[0].steps == 1
        assert ask(ws, {"type": "step", "data": {"n": 3}, "request_id": "3"})["data"]["observation"]["steps"] == 2
