"""Dashboard subscribers on ``/ws/ui?dashboard=1`` (PROTOCOL.md UI-7, UI-8)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from openenv_anyio.core import decode_ui_frame
from openenv_anyio.envs.echo import EchoEnv

from .conftest import TIMEOUT, ask, running, ws_connect
from .envs import Tracked

DASHBOARD_MEMBERS = {"status", "opened_at", "reward", "done", "episode_count", "episode_return", "rewards", "returns"}


def frame(ui: ClientConnection, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The next frame, checked against the spec's ui-frame schema."""
    text = ui.recv(timeout=timeout)
    assert isinstance(text, str)
    decode_ui_frame(text)
    return json.loads(text)


def next_matching(ui: ClientConnection, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The next frame that passes ``test`` (dashboards may see intermediate updates)."""
    for _ in range(200):
        found = frame(ui)
        if test(found):
            return found
    raise AssertionError("no matching frame within 200 frames")


def state_of(session_id: str, **expected: Any) -> Callable[[dict[str, Any]], bool]:
    def test(found: dict[str, Any]) -> bool:
        if found["type"] != "state_update" or found["episode_state"]["session_id"] != session_id:
            return False
        return all(found["episode_state"].get(key) == value for key, value in expected.items())

    return test


def test_a_dashboard_sees_a_session_open_step_and_close() -> None:
    """UI-7 (opened, rewards, return, returns of earlier episodes) and UI-8 (session_closed)."""
    with running(EchoEnv) as server, ws_connect(server, "/ws/ui?dashboard=1") as ui:
        with ws_connect(server) as ws:
            opened = next_matching(ui, lambda f: f["type"] == "state_update")["episode_state"]
            session_id = opened["session_id"]
            assert opened.keys() >= DASHBOARD_MEMBERS
            assert opened["status"] == "idle" and opened["episode_count"] == 0 and opened["step_count"] == 0
            assert opened["rewards"] == [] and opened["returns"] == []

            ask(ws, {"type": "reset", "data": {}})
            for message in ("ab", "abcd"):  # EchoEnv's reward is the message's length
                ask(ws, {"type": "step", "data": {"message": message}})
            stepped = next_matching(ui, state_of(session_id, step_count=2))["episode_state"]
            assert stepped["rewards"] == [2.0, 4.0] and stepped["episode_return"] == 6.0
            assert stepped["reward"] == 4.0 and stepped["done"] is False and stepped["episode_count"] == 1

            ask(ws, {"type": "reset", "data": {}})
            again = next_matching(ui, state_of(session_id, episode_count=2))["episode_state"]
            assert again["returns"] == [6.0] and again["rewards"] == [] and again["episode_return"] == 0.0
            assert again["status"] == "idle"
        closed = next_matching(ui, lambda f: f["type"] == "session_closed")
        assert closed == {"type": "session_closed", "session_id": session_id, "reason": "closed"}


def test_a_plain_subscriber_sees_only_the_base_members() -> None:
    """UI-7: without dashboard=1, episode_state is what UI-2/UI-3 name, and no session_closed."""
    with running(EchoEnv) as server, ws_connect(server, "/ws/ui") as ui:
        with ws_connect(server) as ws:
            ask(ws, {"type": "reset", "data": {}})
            ask(ws, {"type": "step", "data": {"message": "x"}})
            state = next_matching(ui, lambda f: f["episode_state"]["step_count"] == 1)["episode_state"]
            assert set(state) == {
                "episode_id",
                "step_count",
                "current_observation",
                "action_logs",
                "is_reset",
                "session_id",
            }
        with pytest.raises(TimeoutError):  # the session ended: nothing more for a plain subscriber
            frame(ui, timeout=0.5)


def test_a_dashboard_sees_a_long_step_as_stepping() -> None:
    """UI-7: an update when a request starts, with status stepping, then idle when it ends."""
    with running(Tracked) as server, ws_connect(server, "/ws/ui?dashboard=1") as ui, ws_connect(server) as ws:
        session_id = next_matching(ui, lambda f: f["type"] == "state_update")["episode_state"]["session_id"]
        ask(ws, {"type": "reset", "data": {}})
        ws.send(json.dumps({"type": "step", "data": {"sleep": 0.3}}))
        next_matching(ui, state_of(session_id, status="stepping"))
        assert json.loads(ws.recv(timeout=TIMEOUT))["type"] == "observation"
        next_matching(ui, state_of(session_id, status="idle", step_count=1))


def test_a_dropped_resumable_session_is_shown_then_expires() -> None:
    """UI-7 (status dropped while the resume grace runs) and UI-8 (reason expired)."""
    with running(EchoEnv, resume_grace_s=0.5) as server, ws_connect(server, "/ws/ui?dashboard=1") as ui:
        with ws_connect(server, subprotocols=["openenv-anyio.v1"]) as ws:
            hello = json.loads(ws.recv(timeout=TIMEOUT))
            assert hello["type"] == "session"
            session_id = hello["data"]["session_id"]
            ask(ws, {"type": "reset", "data": {}})
            ws.socket.close()  # a lost link, not a goodbye: the session waits to be resumed
        next_matching(ui, state_of(session_id, status="dropped"))
        closed = next_matching(ui, lambda f: f["type"] == "session_closed")
        assert closed == {"type": "session_closed", "session_id": session_id, "reason": "expired"}
