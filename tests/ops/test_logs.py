"""``--log-format json``: one JSON object per line, one event per session lifecycle step and
per error, carrying the session's identity; the console format stays readable."""

from __future__ import annotations

import json
import signal

from serve_process import serve_process
from websockets.sync.client import connect

from openenv_anyio.core import RESUME_TOKEN_HEADER, SUBPROTOCOL

TIMEOUT = 20.0
TARGET = "openenv_anyio.envs.echo:EchoEnv"


def by_event(events: list[dict], name: str) -> list[dict]:  # type: ignore[type-arg]
    return [event for event in events if event["event"] == name]


def test_json_events_for_a_session_and_its_errors() -> None:
    with serve_process(TARGET, "--log-format", "json", "--log-level", "info") as served:
        with connect(served.ws_url, subprotocols=[SUBPROTOCOL], open_timeout=TIMEOUT) as ws:  # type: ignore[list-item]
            session = json.loads(ws.recv(timeout=TIMEOUT))["data"]
            ws.send(json.dumps({"type": "reset", "request_id": "r1", "data": {"episode_id": "ep-7"}}))
            ws.recv(timeout=TIMEOUT)
            ws.send(json.dumps({"type": "step", "data": {"no_such_field": 1}, "request_id": "s1"}))
            assert json.loads(ws.recv(timeout=TIMEOUT))["data"]["code"] == "VALIDATION_ERROR"
            host, port = ws.socket.getsockname()[:2]
            local = f"{host}:{port}"
            ws.send(json.dumps({"type": "close"}))
        with connect(
            served.ws_url,
            additional_headers={RESUME_TOKEN_HEADER: "no.such"},
            subprotocols=[SUBPROTOCOL],
            open_timeout=TIMEOUT,
        ) as stranger:  # type: ignore[list-item]
            assert json.loads(stranger.recv(timeout=TIMEOUT))["data"]["code"] == "SESSION_NOT_FOUND"
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0
    events = served.json_events()  # every line is JSON
    assert all({"event", "level", "logger", "timestamp"} <= event.keys() for event in events)
    names = [event["event"] for event in events]
    assert names[0] == "server_started" and names[-1] == "server_stopped"
    assert "signal_received" in names and "server_draining" in names
    (opened,) = by_event(events, "session_opened")
    assert opened["session_id"] == session["session_id"] and opened["peer"] == local and opened["resumable"] is True
    error = next(e for e in by_event(events, "error_sent") if e["code"] == "VALIDATION_ERROR")
    assert error["session_id"] == session["session_id"] and error["episode_id"] == "ep-7"
    assert error["request_id"] == "s1" and error["peer"] == local and error["level"] == "info"
    (closed,) = by_event(events, "session_closed")
    assert closed["close_code"] == 1000 and closed["episode_id"] == "ep-7" and closed["reason"] == "close"
    refused = next(e for e in by_event(events, "error_sent") if e["code"] == "SESSION_NOT_FOUND")
    assert "session_id" not in refused
    assert by_event(events, "connection_refused")[0]["close_code"] == 4404


def test_console_format_is_readable_text() -> None:
    with serve_process(TARGET) as served:
        with connect(served.ws_url, open_timeout=TIMEOUT) as ws:
            ws.send(json.dumps({"type": "reset"}))
            ws.recv(timeout=TIMEOUT)
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0
    text = "".join(served.lines)
    assert "serving on http://" in text
    opened = next(line for line in served.lines if "session_opened" in line)
    assert "[info" in opened and "session_id=" in opened and "peer=127.0.0.1:" in opened
    # A close code reads as its number, whichever library's enum carried it (not
    # "<CloseReason.NORMAL_CLOSURE: 1000>" beside "<CloseCode.NORMAL: 1000>").
    closed = next(line for line in served.lines if "session_closed" in line)
    assert "close_code=1000 " in closed, closed
    assert not any(line.lstrip().startswith("{") for line in served.lines)
