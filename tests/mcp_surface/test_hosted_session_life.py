"""A hosted session (``openenv/session/create`` on ``POST /mcp``) lives the life every session
does: logged when it opens and ends, counted in ``/metrics`` by kind and outcome, shown to
dashboards until it ends with the outcome that ended it; a refused attach
(``/ws?session_id=`` unknown or busy) is counted as every refused connection is."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio.core import SessionOutcome, load_spec
from tests.ops.scrape import scrape

from .test_mcp_server import TIMEOUT, ask, rpc, running, wait_for, ws


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    """The structured events named ``name`` the server logged (``observability.events``)."""
    found = []
    for record in caplog.records:
        event = record.msg
        if isinstance(event, dict) and event.get("event") == name:
            found.append(event)
    return found


def test_a_hosted_session_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "openenv_anyio.server")
    with running() as server:
        session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
        with ws(server, f"/ws?session_id={session_id}") as socket:
            ask(socket, {"type": "reset"})
            socket.send(json.dumps({"type": "close"}))
            with pytest.raises(ConnectionClosed):
                socket.recv(timeout=TIMEOUT)
        assert rpc(server, "openenv/session/close", {"session_id": session_id})["result"]["closed"] is True
        metrics = scrape(server.url)
        assert metrics.value("openenv_sessions_opened_total", kind="hosted") == 1
        assert metrics.value("openenv_sessions_ended_total", kind="hosted", outcome="closed") == 1
        assert metrics.value("openenv_sessions_closed_total", code="1000") == 1  # the attached socket's close
    (opened,) = events(caplog, "session_opened")
    (closed,) = events(caplog, "session_closed")
    assert opened["kind"] == closed["kind"] == "hosted"
    assert opened["session_id"] == closed["session_id"] != session_id  # the public id, never the secret
    assert closed["outcome"] == "closed"
    (detached,) = events(caplog, "session_detached")
    assert detached["session_id"] == opened["session_id"] and detached["close_code"] == 1000


def test_a_refused_attach_is_counted_as_a_refusal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "openenv_anyio.server")
    with running() as server:
        with ws(server, "/ws?session_id=no-such-session") as stranger:
            assert json.loads(stranger.recv(timeout=TIMEOUT))["data"]["code"] == "SESSION_NOT_FOUND"
            with pytest.raises(ConnectionClosed):
                stranger.recv(timeout=TIMEOUT)
        session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
        with ws(server, f"/ws?session_id={session_id}") as first:
            ask(first, {"type": "reset"})
            with ws(server, f"/ws?session_id={session_id}") as second:
                assert json.loads(second.recv(timeout=TIMEOUT))["data"]["code"] == "SESSION_ERROR"
                with pytest.raises(ConnectionClosed):
                    second.recv(timeout=TIMEOUT)
        metrics = scrape(server.url)
        assert metrics.value("openenv_sessions_closed_total", code="4404") == 1
        assert metrics.value("openenv_sessions_closed_total", code="4409") == 1
    assert sorted(event["close_code"] for event in events(caplog, "connection_refused")) == [4404, 4409]


def test_an_idle_hosted_session_ends_expired_on_the_dashboard(caplog: pytest.LogCaptureFixture) -> None:
    """UI-8: a hosted session the idle timeout ended is ``expired`` (not ``closed``), in the
    dashboard's ``session_closed`` and in the log."""
    caplog.set_level(logging.INFO, "openenv_anyio.server")
    with running(hosted_session_idle_s=0.3) as server, ws(server, "/ws/ui?dashboard=1") as ui:
        rpc(server, "openenv/session/create")
        opened = json.loads(ui.recv(timeout=TIMEOUT))
        public_id = opened["episode_state"]["session_id"]
        while (found := json.loads(ui.recv(timeout=TIMEOUT)))["type"] != "session_closed":
            pass
        assert found == {"type": "session_closed", "session_id": public_id, "reason": "expired"}
        wait_for(lambda: bool(events(caplog, "session_closed")))
        assert scrape(server.url).value("openenv_sessions_ended_total", kind="hosted", outcome="expired") == 1
    (closed,) = events(caplog, "session_closed")
    assert closed["session_id"] == public_id and closed["outcome"] == "expired"


def test_shutdown_ends_a_hosted_session_as_shutdown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "openenv_anyio.server")
    with running() as server:
        rpc(server, "openenv/session/create")
    (closed,) = events(caplog, "session_closed")
    assert closed["kind"] == "hosted" and closed["outcome"] == "shutdown"


def test_the_outcomes_are_the_spec_reasons() -> None:
    """UI-8: the outcomes dashboards see are exactly the reasons the spec allows."""
    schema = load_spec().document("frames/session-closed.json")
    assert [outcome.value for outcome in SessionOutcome] == schema["properties"]["reason"]["enum"]
