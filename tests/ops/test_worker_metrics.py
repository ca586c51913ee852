"""``serve --workers 2``: one scrape of ``/metrics``, whichever worker answers it, counts
every worker's sessions, steps and errors exactly (prometheus-client's multiprocess mode)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections import Counter

from serve_process import serve_process
from websockets.sync.client import connect

from openenv_anyio.core import SUBPROTOCOL
from openenv_anyio.server.workers.routing import session_owner

from .scrape import scrape

TIMEOUT = 20.0
TARGET = "openenv_anyio.envs.echo:EchoEnv"
SESSIONS = 8


def test_one_scrape_sees_every_worker() -> None:
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        slots: Counter[int] = Counter()
        with contextlib.ExitStack() as stack:
            connections = [
                stack.enter_context(connect(served.ws_url, subprotocols=[SUBPROTOCOL], open_timeout=TIMEOUT))  # type: ignore[list-item]
                for _ in range(SESSIONS)
            ]
            for ws in connections:
                session_id = json.loads(ws.recv(timeout=TIMEOUT))["data"]["session_id"]
                owner = session_owner(session_id)
                assert owner is not None
                slots[owner[0]] += 1
                for frame in (
                    {"type": "reset"},
                    {"type": "step", "data": {"message": "a"}},
                    {"type": "step", "data": {}},
                ):
                    ws.send(json.dumps(frame))
                    ws.recv(timeout=TIMEOUT)
            assert set(slots) == {0, 1}  # both workers hold sessions
            for _ in range(4):  # any worker may answer a scrape: each sees the whole server
                during = scrape(served.url)
                assert during.value("openenv_sessions_active") == SESSIONS
                assert during.value("openenv_steps_total") == SESSIONS
                assert during.value("openenv_resets_total") == SESSIONS
                assert during.value("openenv_errors_total", code="VALIDATION_ERROR") == SESSIONS
                assert during.value("openenv_ui_subscribers") == 0
        after = scrape(served.url)
        for _ in range(200):  # the workers see the closes in their own time
            if after.value("openenv_sessions_closed_total", code="1000") == SESSIONS:
                break
            after = scrape(served.url)
        closed = {
            code: count for code, count in after.labelled("openenv_sessions_closed_total", "code").items() if count
        }
        assert closed == {"1000": SESSIONS}
        assert after.value("openenv_sessions_active") == 0
        assert after.value("openenv_request_duration_seconds_count", type="step") == 2 * SESSIONS
        assert served.stop(signal.SIGTERM) == 0


def test_a_dead_workers_sessions_leave_the_gauge_its_counts_stay() -> None:
    """A worker killed outright: its live sessions stop counting in openenv_sessions_active
    (the supervisor tells prometheus-client), the steps it served stay in the totals."""
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        with contextlib.ExitStack() as stack:
            by_slot: dict[int, list[object]] = {0: [], 1: []}
            for _ in range(SESSIONS):
                ws = stack.enter_context(connect(served.ws_url, subprotocols=[SUBPROTOCOL], open_timeout=TIMEOUT))  # type: ignore[list-item]
                owner = session_owner(json.loads(ws.recv(timeout=TIMEOUT))["data"]["session_id"])
                assert owner is not None
                ws.send(json.dumps({"type": "step", "data": {"message": "a"}}))
                ws.recv(timeout=TIMEOUT)
                by_slot[owner[0]].append(ws)
            assert by_slot[0] and by_slot[1]
            mark = len(served.lines)
            os.kill(served.pids[1], signal.SIGKILL)
            served.wait_for_line(r"worker 1 restarted", start=mark)
            survivors = len(by_slot[0])
            after = scrape(served.url)
            for _ in range(200):  # the dead worker's gauge goes once the supervisor has seen it die
                if after.value("openenv_sessions_active") == survivors:
                    break
                after = scrape(served.url)
            assert after.value("openenv_sessions_active") == survivors
            assert after.value("openenv_steps_total") == SESSIONS
        assert served.stop(signal.SIGTERM) == 0
