"""Session lifetime and execution: idle timeout, liveness, errors, threads, shutdown, leaks."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import threading
import time

import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio.envs.echo import EchoEnv

from .conftest import TIMEOUT, ask, running, wait_for, ws_connect
from .envs import AsyncEnv, InlineTracked, Tracked, failing_factory


def closed_code(ws) -> tuple[int, str]:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=TIMEOUT)
    assert closed.value.rcvd is not None, "the server sent a close frame"
    return closed.value.rcvd.code, closed.value.rcvd.reason


def test_idle_session_is_closed_with_4408() -> None:
    """WS-IDLE-1: close 4408 with a reason naming the timeout; the env is closed."""
    closed_before = Tracked.closed
    with running(Tracked, session_timeout_s=0.4) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        start = time.monotonic()
        code, reason = closed_code(ws)
        elapsed = time.monotonic() - start
        assert code == 4408 and "session_timeout" in reason
        assert 0.4 * 0.9 <= elapsed < 0.4 + 5
        wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
    assert Tracked.closed == closed_before + 1


def test_long_step_is_not_reaped() -> None:
    """WS-IDLE-2: a step longer than the idle timeout completes and is answered."""
    with running(Tracked, session_timeout_s=0.3) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        answer = ask(ws, {"type": "step", "data": {"sleep": 0.9}})
        assert answer["type"] == "observation"
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1
        assert closed_code(ws)[0] == 4408


def test_long_async_step_is_not_reaped() -> None:
    """WS-IDLE-2 for a step that awaits on the event loop (a cancellation reaches it there,
    where a thread-run step is waited for): it outlives the idle timeout and is answered."""
    with running(AsyncEnv, session_timeout_s=0.3) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        answer = ask(ws, {"type": "step", "data": {"sleep": 0.9}})
        assert answer["type"] == "observation" and answer["data"]["observation"]["count"] == 1
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1
        assert closed_code(ws)[0] == 4408


def test_env_exception_is_execution_error_and_session_continues() -> None:
    """WS-ERR-7: same instance afterwards (its step count kept)."""
    with running(Tracked) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        ask(ws, {"type": "step", "data": {}})
        answer = ask(ws, {"type": "step", "data": {"raise": "boom"}})
        assert answer["data"]["code"] == "EXECUTION_ERROR"
        assert "boom" in answer["data"]["message"]
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 2


def test_factory_failure_is_factory_error_then_1011() -> None:
    """WS-FACT-1."""
    with running(failing_factory) as server, ws_connect(server) as ws:
        error = json.loads(ws.recv(timeout=TIMEOUT))
        assert error["type"] == "error"
        assert error["data"]["code"] == "FACTORY_ERROR"
        assert "no environment today" in error["data"]["message"]
        assert closed_code(ws)[0] == 1011
        wait_for(lambda: server.stats()["active_sessions"] == 0)


def test_sync_env_calls_of_a_session_share_one_thread() -> None:
    """SRV-EXEC-1: factory, reset, step and state of one session run on one worker thread;
    another session gets another thread."""
    with running(Tracked) as server, ws_connect(server) as first, ws_connect(server) as second:
        ask(first, {"type": "reset"})
        for _ in range(5):
            ask(first, {"type": "step", "data": {}})
        threads = ask(first, {"type": "state"})["data"]["threads"]
        assert len(threads) == 1
        assert threads[0] != threading.get_ident()
        other = ask(second, {"type": "state"})["data"]["threads"]
        assert len(other) == 1 and other != threads


def test_non_blocking_env_runs_inline_on_the_event_loop() -> None:
    """SRV-EXEC-1: a NON_BLOCKING env runs on the loop thread, shared by all sessions."""
    with running(InlineTracked) as server, ws_connect(server) as first, ws_connect(server) as second:
        ask(first, {"type": "step", "data": {}})
        ask(second, {"type": "step", "data": {}})
        one = ask(first, {"type": "state"})["data"]["threads"]
        two = ask(second, {"type": "state"})["data"]["threads"]
        assert len(one) == 1 and one == two


def test_inline_setting_overrides_the_declaration() -> None:
    """``ServerConfig(inline=True)`` runs even undeclared sync envs on the loop."""
    with running(Tracked, inline=True) as server, ws_connect(server) as first, ws_connect(server) as second:
        assert ask(first, {"type": "state"})["data"]["threads"] == ask(second, {"type": "state"})["data"]["threads"]


def test_async_env_is_awaited() -> None:
    """Async reset/step/state (state as a method); a sleeping step does not block others."""
    with running(AsyncEnv) as server, ws_connect(server) as slow, ws_connect(server) as fast:
        assert ask(slow, {"type": "reset"})["data"]["observation"]["kind"] == "async"
        slow.send(json.dumps({"type": "step", "data": {"sleep": 0.5}}))
        assert ask(fast, {"type": "step", "data": {}})["data"]["reward"] == 1
        answer = json.loads(slow.recv(timeout=TIMEOUT))
        assert answer["data"]["observation"]["count"] == 1
        assert ask(slow, {"type": "state"})["data"] == {"episode_id": "async-ep", "step_count": 1}


def test_shutdown_closes_connections_with_1001_and_envs() -> None:
    """WS-SHUT-1."""
    live_before = Tracked.live
    with contextlib.ExitStack() as clients:
        with running(Tracked) as server:
            ws = clients.enter_context(ws_connect(server))
            ui = clients.enter_context(ws_connect(server, "/ws/ui"))
            ask(ws, {"type": "reset"})
            assert Tracked.live == live_before + 1
        assert closed_code(ws)[0] == 1001
        assert closed_code(ui)[0] == 1001
    assert Tracked.live == live_before


def _raw_handshake(url: str, path: str = "/ws") -> socket.socket:
    """Open /ws by hand, then never read or answer again: a peer that vanished (half-open)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    assert response.startswith(b"HTTP/1.1 101")
    return sock


def test_half_open_peer_is_freed_within_ping_timeout() -> None:
    """WS-PING-1: pings go unanswered -> the session is freed, the env closed."""
    with running(Tracked, ping_interval_s=0.2, ping_timeout_s=0.4) as server:
        sock = _raw_handshake(server.url)
        try:
            wait_for(lambda: server.stats()["active_sessions"] == 1)
            elapsed = wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
            assert elapsed < 0.2 + 0.4 + 5
        finally:
            sock.close()


def test_idle_peer_that_answers_pings_is_kept() -> None:
    """WS-PING-1: a live client (its library answers pings) survives many ping rounds."""
    with running(Tracked, ping_interval_s=0.1, ping_timeout_s=0.5) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        time.sleep(1.5)  # two or more ping rounds
        assert ask(ws, {"type": "state"})["type"] == "state"
        assert server.stats()["active_sessions"] == 1


def test_connect_reset_close_cycles_leave_nothing_behind() -> None:
    """WS-CLOSE-2: 1,000 cycles -> zero sessions, zero env instances; one after another, the
    sessions share a few threads (a session may open while the last one's env still closes),
    which wait for the next session and end with the server."""
    live_before = Tracked.live
    threads_outside = threading.active_count()
    names_before = set(Tracked.made_on)
    with running(Tracked) as server:
        for _ in range(1000):
            with ws_connect(server) as ws:
                ask(ws, {"type": "reset"})
                ws.send(json.dumps({"type": "close"}))
                with pytest.raises(ConnectionClosed):
                    ws.recv(timeout=TIMEOUT)
        wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
        assert Tracked.live == live_before
        assert 1 <= len(Tracked.made_on - names_before) <= 10
    wait_for(lambda: threading.active_count() <= threads_outside)


def test_session_threads_end_with_their_sessions_when_none_may_wait() -> None:
    """``session_thread_idle_s=0``: every session gets a thread of its own, which ends with
    it (for environments whose thread-local state must never meet another session)."""
    names_before = set(Tracked.made_on)
    with running(Tracked, session_thread_idle_s=0) as server:
        for _ in range(20):
            with ws_connect(server) as ws:
                ask(ws, {"type": "reset"})
        wait_for(lambda: server.stats()["live_envs"] == 0)
        assert len(Tracked.made_on - names_before) == 20
        wait_for(lambda: not [t for t in threading.enumerate() if t.name in Tracked.made_on - names_before])


def test_session_thread_idle_below_zero_is_refused() -> None:
    from openenv_anyio.server.config import ServerConfig

    with pytest.raises(ValueError, match="session_thread_idle_s must be 0 or more"):
        ServerConfig(session_thread_idle_s=-1)
    assert ServerConfig().session_thread_idle_s == 10.0


def test_the_cli_refuses_a_negative_session_thread_idle_in_one_line() -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-m", "openenv_anyio", "serve", "openenv_anyio.envs.guess:GuessNumberEnv"]
    done = subprocess.run(
        [*argv, "--session-thread-idle", "-1"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "openenv-anyio serve: --session-thread-idle must be 0 or more (0: a session's thread ends with it)"
    )


def test_shutdown_lets_a_running_step_finish_first() -> None:
    """WS-SHUT-1 with WS-ORDER-1: the executing step is answered, then close 1001."""
    with contextlib.ExitStack() as clients:
        with running(Tracked) as server:
            ws = clients.enter_context(ws_connect(server))
            ask(ws, {"type": "reset"})
            ws.send(json.dumps({"type": "step", "data": {"sleep": 0.5}}))
            wait_for(lambda: Tracked.live > 0)
            time.sleep(0.1)
        assert json.loads(ws.recv(timeout=TIMEOUT))["type"] == "observation"
        assert closed_code(ws)[0] == 1001


def test_client_that_stops_reading_is_dropped_after_send_timeout() -> None:
    """WS-CLOSE-2: answers pile up unread -> after ``send_timeout_s`` without progress the
    connection is dropped and its session freed."""
    with running(EchoEnv, send_timeout_s=0.5) as server:
        sock = _raw_handshake(server.url)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(0.2)
        try:
            frame = _masked_text_frame(json.dumps({"type": "step", "data": {"message": "m", "pad": 200_000}}))
            for _ in range(500):  # 100 MB of answers, never read: the buffers fill up
                try:
                    sock.sendall(frame)
                except OSError:
                    break
            wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})
        finally:
            sock.close()


def _masked_text_frame(text: str) -> bytes:
    """One client-to-server WebSocket text frame (RFC 6455: clients mask)."""
    payload = text.encode()
    mask = os.urandom(4)
    assert len(payload) < 126
    masked = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
    return bytes([0x81, 0x80 | len(payload)]) + mask + masked
