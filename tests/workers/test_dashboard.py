"""Under ``serve --workers N`` a ``/ws/ui`` subscriber sees every worker's sessions, each once,
with their updates, hosted ones too, whichever worker accepted it (the dashboard relay,
``workers.dashboard_relay``); the kit's ``UI-01`` passes on every run."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from serve_process import ServeProcess, serve_process
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync
from openenv_anyio.conformance.verdicts import Verdict
from openenv_anyio.core import SUBPROTOCOL
from openenv_anyio.server.workers.routing import session_owner

from .test_hosted_sessions import BATCH, TARGET, TIMEOUT_S

#: dashboards opened, each on a new connection (the kernel picks the worker that accepts each)
DASHBOARDS = 8


@pytest.fixture(scope="module")
def fleet() -> Iterator[ServeProcess]:
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        yield served


def _open_session(fleet: ServeProcess, sockets: contextlib.ExitStack) -> tuple[ClientConnection, str]:
    """A resumable session (its id names the worker holding it) and its id."""
    socket = sockets.enter_context(connect(fleet.ws_url, subprotocols=[SUBPROTOCOL], open_timeout=TIMEOUT_S))  # type: ignore[list-item]
    hello = json.loads(socket.recv(timeout=TIMEOUT_S))
    assert hello["type"] == "session"
    return socket, str(hello["data"]["session_id"])


@contextlib.contextmanager
def _sessions_on_both_workers(fleet: ServeProcess) -> Iterator[list[tuple[ClientConnection, str]]]:
    """Open sessions a batch at a time until both workers hold some."""
    opened: list[tuple[ClientConnection, str]] = []
    with contextlib.ExitStack() as sockets:
        with ThreadPoolExecutor(BATCH) as pool:
            for _ in range(10):
                opened += pool.map(lambda _: _open_session(fleet, sockets), range(BATCH))
                if len(Counter(session_owner(session_id)[0] for _, session_id in opened)) == 2:  # type: ignore[index]
                    break
        assert len(Counter(session_owner(session_id)[0] for _, session_id in opened)) == 2  # type: ignore[index]
        try:
            yield opened
        finally:
            for socket, _ in opened:
                with contextlib.suppress(Exception):
                    socket.send(json.dumps({"type": "close"}))  # ended, not parked for a resume


def _dashboard(fleet: ServeProcess) -> ClientConnection:
    return connect(fleet.ws_url + "/ui?dashboard=1", open_timeout=TIMEOUT_S)


def _frames_until(ui: ClientConnection, done: Any) -> list[dict[str, Any]]:
    """Frames until ``done(frames)`` holds."""
    frames: list[dict[str, Any]] = []
    while not done(frames):
        frames.append(json.loads(ui.recv(timeout=TIMEOUT_S)))
    return frames


def _ids(frames: list[dict[str, Any]]) -> Counter[str]:
    return Counter(frame["episode_state"]["session_id"] for frame in frames if frame["type"] == "state_update")


def test_every_dashboard_sees_every_workers_sessions_once(fleet: ServeProcess) -> None:
    with _sessions_on_both_workers(fleet) as opened, httpx.Client(base_url=fleet.url, timeout=TIMEOUT_S) as http:
        hosted = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})
        assert "result" in hosted.json()
        expected = {session_id for _, session_id in opened}
        for _ in range(DASHBOARDS):
            with _dashboard(fleet) as ui:
                # the resumable sessions, and one more: the hosted one (shown under its public id)
                frames = _frames_until(ui, lambda frames: len(_ids(frames)) == len(expected) + 1)
                assert expected < set(_ids(frames))  # and one more: the hosted session
        # updates of a session of each worker reach a dashboard, whichever worker accepted it
        with _dashboard(fleet) as ui:
            _frames_until(ui, lambda frames: len(_ids(frames)) == len(expected) + 1)
            by_worker = {session_owner(session_id)[0]: (socket, session_id) for socket, session_id in opened}  # type: ignore[index]
            for socket, session_id in by_worker.values():
                socket.send(json.dumps({"type": "reset", "data": {"episode_id": "ep-" + session_id[-6:]}}))
                assert json.loads(socket.recv(timeout=TIMEOUT_S))["type"] == "observation"
                _frames_until(
                    ui,
                    lambda frames, session_id=session_id: any(
                        frame["type"] == "state_update"
                        and frame["episode_state"]["session_id"] == session_id
                        and frame["episode_state"]["episode_id"] == "ep-" + session_id[-6:]
                        for frame in frames
                    ),
                )


def test_a_session_closed_in_another_worker_reaches_the_dashboard(fleet: ServeProcess) -> None:
    with _sessions_on_both_workers(fleet) as opened:
        for _ in range(4):
            with _dashboard(fleet) as ui:
                _frames_until(ui, lambda frames: {s for _, s in opened} <= set(_ids(frames)))
                socket, session_id = opened.pop()
                socket.send(json.dumps({"type": "close"}))
                frames = _frames_until(
                    ui,
                    lambda frames, session_id=session_id: (
                        {"type": "session_closed", "session_id": session_id, "reason": "closed"} in frames
                    ),
                )
                assert frames[-1]["reason"] == "closed"


def test_the_kits_ui_case_passes_every_time(fleet: ServeProcess) -> None:
    """UI-01 failed in about half of the runs when the dashboard saw one worker only."""
    with _sessions_on_both_workers(fleet):
        for _ in range(6):
            report = run_checks_sync(CheckOptions(url=fleet.url, only=["UI-01"]))
            (ui,) = report.results
            assert ui.verdict is Verdict.PASS, ui.reason
