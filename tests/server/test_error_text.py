"""What clients learn of an environment's exception (SEC-ERR-1): the type and a clipped,
path-free message, or only an error id; the server's log has the id and the traceback."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from openenv_anyio.server.config import ServerConfig
from openenv_anyio.server.execution.error_text import MAX_MESSAGE_CHARS, scrub_paths

from .conftest import TIMEOUT, ask, running, ws_connect
from .envs import Tracked, failing_factory

LEAK = "cannot open /home/alice/.secrets/api-key.txt: token=hunter2"


def error_records(caplog: pytest.LogCaptureFixture, error_id: str) -> list[logging.LogRecord]:
    """The records that log the failure with its traceback (others may name the id too)."""
    return [record for record in caplog.records if error_id in record.getMessage() and record.exc_info]


def test_exposed_errors_show_type_and_message_without_paths(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "openenv_anyio.server")
    with running(Tracked, expose_errors=True) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        error = ask(ws, {"type": "step", "data": {"raise": LEAK}})["data"]
        assert error["code"] == "EXECUTION_ERROR"
        assert error["message"] == "ValueError: cannot open <path>: token=hunter2"
        (record,) = error_records(caplog, error["error_id"])
        assert record.exc_info is not None and "/home/alice" in str(record.exc_info[1])
        assert ask(ws, {"type": "step", "data": {}})["type"] == "observation"  # WS-ERR-7: it goes on


def test_hidden_errors_show_only_an_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "openenv_anyio.server")
    with running(Tracked, expose_errors=False) as server:
        with ws_connect(server) as ws:
            ask(ws, {"type": "reset"})
            error = ask(ws, {"type": "step", "data": {"raise": LEAK}})["data"]
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
            response = http.post("/step", json={"action": {"raise": LEAK}})
    assert error["code"] == "EXECUTION_ERROR" and "ValueError" not in error["message"]
    assert error["message"] == f"internal error {error['error_id']} (the server's log has the details)"
    assert response.status_code == 500
    body = response.json()
    assert set(body) == {"detail", "error_id"} and "hunter2" not in response.text and "ValueError" not in response.text
    for error_id in (error["error_id"], body["error_id"]):
        (record,) = error_records(caplog, error_id)
        assert record.exc_info is not None and LEAK in str(record.exc_info[1])


@pytest.mark.parametrize("expose", [True, False])
def test_http_500_bodies_carry_no_traceback_or_path(expose: bool) -> None:
    with running(Tracked, expose_errors=expose) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        response = http.post("/step", json={"action": {"raise": LEAK}})
    assert response.status_code == 500
    assert "Traceback" not in response.text and "/home/alice" not in response.text and ".py" not in response.text
    assert response.json()["error_id"]


@pytest.mark.parametrize("expose", [True, False])
def test_factory_errors_follow_the_same_rule(expose: bool) -> None:
    with running(failing_factory, expose_errors=expose) as server, ws_connect(server) as ws:
        frame = json.loads(ws.recv(timeout=TIMEOUT))
    error = frame["data"]
    assert error["code"] == "FACTORY_ERROR" and error["error_id"]
    assert ("no environment today" in error["message"]) is expose


def test_the_default_exposes_on_loopback_only() -> None:
    """Loopback clients are the developer's own processes; elsewhere they are other people."""
    assert ServerConfig(host="127.0.0.1").errors_exposed and ServerConfig(host="::1").errors_exposed
    assert ServerConfig(host="localhost").errors_exposed
    assert not ServerConfig(host="0.0.0.0").errors_exposed and not ServerConfig(host="10.1.2.3").errors_exposed
    assert not ServerConfig(host="127.0.0.1", expose_errors=False).errors_exposed
    assert ServerConfig(host="0.0.0.0", expose_errors=True).errors_exposed


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("No such file: /srv/app/env.py", "No such file: <path>"),
        ("'/home/u/x.cfg' missing", "'<path>' missing"),
        (r"C:\Users\u\env.py line 3", "<path> line 3"),
        ("ratio 3/4 and a/b", "ratio 3/4 and a/b"),
        ("see https://example.org/docs/x", "see https://example.org/docs/x"),
    ],
)
def test_paths_are_scrubbed(text: str, shown: str) -> None:
    assert scrub_paths(text) == shown


def test_long_messages_are_clipped() -> None:
    with running(Tracked, expose_errors=True) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        message = ask(ws, {"type": "step", "data": {"raise": "x" * 5000}})["data"]["message"]
    assert len(message) <= len("ValueError: ") + MAX_MESSAGE_CHARS and message.endswith("\u2026")
