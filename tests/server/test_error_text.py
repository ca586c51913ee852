"""What clients learn of an environment's exception (SEC-ERR-1): the type and a clipped,
path-free message, or only an error id; the server's log has the id and the traceback."""

from __future__ import annotations

import json
import logging
from pathlib import Path

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


class _Huge(Exception):
    """An exception whose message is ten million characters of paths and words."""

    def __str__(self) -> str:
        return ("see /srv/app/secret.cfg and " * 400_000)[:10_000_000]


def test_a_huge_message_is_clipped_before_anything_else_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """SRV-FAULT-2: the path scrubber and the whitespace folding read a window of the message
    a few times the shown length, never the whole of it (a 10 MB message stalled every session
    while a regular expression ran over all of it)."""
    from openenv_anyio.server.execution import error_text

    seen: list[int] = []
    scrub = error_text.scrub_paths

    def measured(text: str) -> str:
        seen.append(len(text))
        return scrub(text)

    monkeypatch.setattr(error_text, "scrub_paths", measured)
    public = error_text.public_error(_Huge(), expose=True, during="step")
    assert seen and max(seen) <= 4 * MAX_MESSAGE_CHARS
    assert public.message.startswith("_Huge: see <path> and see <path> and")
    assert "/srv" not in public.message and public.message.endswith("\u2026")
    assert len(public.message) <= len("_Huge: ") + MAX_MESSAGE_CHARS


@pytest.mark.parametrize("cut", range(MAX_MESSAGE_CHARS - 30, MAX_MESSAGE_CHARS + 30, 7))
def test_a_path_across_the_clip_shows_no_part_of_itself(cut: int) -> None:
    from openenv_anyio.server.execution.error_text import public_error

    message = "x" * cut + " /home/someone/projects/secret/env.py " + "y" * 5000
    shown = public_error(ValueError(message), expose=True, during="step").message
    assert "/home" not in shown and "someone" not in shown and "secret" not in shown


def test_a_message_utf8_cannot_carry_is_logged_escaped(tmp_path: Path) -> None:
    """SRV-FAULT-2 in the server's log: an exception message holding a lone surrogate is
    logged with its traceback and the message escaped, so a UTF-8 log file takes the line
    (it was formatted raw, and the file's handler failed with a logging error)."""
    from openenv_anyio.server.execution.error_text import public_error

    logger = logging.getLogger("openenv_anyio.server")
    handler = logging.FileHandler(tmp_path / "server.log", encoding="utf-8", errors="strict")
    handler.handleError = _raise_logging_error  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("bad \ud800 text")
        except ValueError as exc:
            public = public_error(exc, expose=True, during="step")
    finally:
        logger.removeHandler(handler)
        handler.close()
    logged = (tmp_path / "server.log").read_text("utf-8")
    assert f"error {public.error_id} during step: ValueError: bad \\ud800 text" in logged
    assert "Traceback (most recent call last)" in logged and "test_error_text.py" in logged


def _raise_logging_error(record: logging.LogRecord) -> None:
    raise AssertionError(f"the log handler failed on {record.msg!r}")
