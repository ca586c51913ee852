"""Sessions handed over between server processes through a session store (PROTOCOL.md
``EXT-HAND-1`` .. ``EXT-HAND-5``): a real server hands its sessions over as it stops, a
second real server on the same port and store takes them back; driven with raw frames
(websockets' sync client, independent of ours) and with our client on both backends."""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from serve_process import serve_environment
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.client import EnvClient
from openenv_anyio.client.reconnect import ReconnectPolicy
from openenv_anyio.core import RESUME_TOKEN_HEADER, SUBPROTOCOL, decode_server_frame
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.env_server import RunningServer
from openenv_anyio.server.session_store import key_digest

from . import keeping_envs
from .redis_server import redis_server

TIMEOUT = 10.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _serving(env: Any, store: str, port: int, **settings: Any) -> Iterator[RunningServer]:
    config = ServerConfig(
        port=port, session_store=store, ping_interval_s=None, ping_timeout_s=None, validate_outbound=True, **settings
    )
    with EnvServer(env, config).run_in_thread() as running:
        yield running


def _open(server: RunningServer, token: str | None = None, path: str = "/ws") -> ClientConnection:
    headers = {RESUME_TOKEN_HEADER: token} if token is not None else None
    return connect(
        "ws" + server.url.removeprefix("http") + path,
        subprotocols=[SUBPROTOCOL] if path == "/ws" else None,  # type: ignore[list-item]
        additional_headers=headers,
        open_timeout=TIMEOUT,
        close_timeout=TIMEOUT,
    )


def _receive(ws: ClientConnection) -> dict[str, Any]:
    text = ws.recv(timeout=TIMEOUT)
    assert isinstance(text, str)
    decode_server_frame(text)  # every frame the server sends matches the spec
    return dict(json.loads(text))


def _ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    return _receive(ws)


def _close_code(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


def _metric(server: RunningServer, name: str) -> float:
    import urllib.request

    with urllib.request.urlopen(server.url + "/metrics", timeout=TIMEOUT) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


#: (environment, an action of its, what the observation counts)
ENVS = {
    "replay": (keeping_envs.Counter, lambda n: {"add": 1}, lambda obs: obs["count"]),
    "snapshot": (keeping_envs.AsyncBoard, lambda n: {"cell": n}, lambda obs: len(obs["cells"])),
}


@pytest.mark.parametrize("way", sorted(ENVS))
def test_a_session_comes_back_with_its_episode_and_ledger(way: str, store_url: str) -> None:
    """EXT-HAND-1, EXT-HAND-2: the first server writes the session and closes 1012 only
    then; the second takes it back by its token: the same session, episode and step count,
    the last request answered from the ledger (not run again), the next one run once."""
    env, action, count = ENVS[way]
    store, port = store_url, _free_port()
    serving = _serving(env, store, port)
    first = serving.__enter__()
    with _open(first) as ws:
        session = _receive(ws)["data"]
        reset = _ask(ws, {"type": "reset", "data": {"seed": 0}, "request_id": "r0"})
        for n in range(1, 4):
            last = _ask(ws, {"type": "step", "data": action(n), "request_id": f"r{n}"})
        assert count(last["data"]["observation"]) == 3
        serving.__exit__(None, None, None)  # the server stops
        assert _close_code(ws) == 1012  # after the session was written (EXT-HAND-1)
    with _serving(env, store, port) as second:
        with _open(second, session["resume_token"]) as again:
            greeting = _receive(again)["data"]
            assert greeting["resumed"] is True
            assert greeting["session_id"] == session["session_id"]
            assert greeting["last_request_id"] == "r3"
            assert greeting["episode_id"] == reset.get("episode_id")
            repeated = _ask(again, {"type": "step", "data": action(3), "request_id": "r3"})
            assert repeated == last  # from the ledger: the environment did not step again
            following = _ask(again, {"type": "step", "data": action(4), "request_id": "r4"})
            assert count(following["data"]["observation"]) == 4
            state = _ask(again, {"type": "state"})["data"]
            assert state["step_count"] in (0, 4)  # Counter's state does not count steps
        assert _metric(second, f'openenv_sessions_imported_total{{way="{way}"}}') == 1


def test_the_store_holds_no_token(tmp_path: Path) -> None:
    """EXT-HAND-5: the store keeps the token's SHA-256, never the token or its secret."""
    path = tmp_path / "sessions.db"
    token = _hand_over_one(keeping_envs.Counter, str(path), _free_port(), {"add": 1})
    raw = b"".join(
        path.parent.joinpath(name).read_bytes()
        for name in ("sessions.db", "sessions.db-wal")
        if path.parent.joinpath(name).exists()
    )
    secret = token.partition(".")[2]
    assert secret.encode() not in raw and token.encode() not in raw
    with sqlite3.connect(path) as db:
        assert db.execute("select count(*) from kept_sessions").fetchone()[0] == 1
        (stored,) = db.execute("select record from kept_sessions").fetchone()
    assert json.loads(stored)["key_digest"] == key_digest(token)


def _hand_over_one(env: Any, store: str, port: int, action: dict[str, Any], **settings: Any) -> str:
    """Open a session, reset and step once, stop the server (the session handed over, or
    not): the session's token."""
    serving = _serving(env, store, port, **settings)
    server = serving.__enter__()
    try:
        with _open(server) as ws:
            token = str(_receive(ws)["data"]["resume_token"])
            _ask(ws, {"type": "reset", "data": {}, "request_id": "1"})
            _ask(ws, {"type": "step", "data": action, "request_id": "2"})
            serving.__exit__(None, None, None)
            _close_code(ws)
    except BaseException:
        serving.__exit__(None, None, None)
        raise
    return token


def _refused(server: RunningServer, token: str) -> tuple[dict[str, Any], int | None]:
    with _open(server, token) as ws:
        error = _receive(ws)
        return error, _close_code(ws)


class Plain(keeping_envs.Counter):
    """Neither snapshots nor replays."""

    DETERMINISTIC = False


@pytest.mark.parametrize(
    ("env", "action", "settings", "code", "words", "cause"),
    [
        (Plain, {"add": 1}, {}, "SESSION_NOT_FOUND", "neither snapshots nor replays", "not_restorable"),
        (
            keeping_envs.Failing,
            {"cell": 1},
            {},
            "SESSION_NOT_FOUND",
            "neither snapshots nor replays",
            "snapshot_failed",
        ),
        (
            keeping_envs.AsyncBoard,
            {"cell": 1},
            {"snapshot_limit_bytes": 4},
            "SESSION_NOT_FOUND",
            "neither snapshots nor replays",
            "snapshot_failed",
        ),
        (keeping_envs.Drifting, {"add": 1}, {}, "REPLAY_MISMATCH", "replaying step 1 of 1", "replay_mismatch"),
    ],
    ids=["not-restorable", "snapshot-raises", "snapshot-too-large", "replay-differs"],
)
def test_a_session_that_cannot_come_back_ends_typed(
    env: Any, action: dict[str, Any], settings: dict[str, Any], code: str, words: str, cause: str, tmp_path: Path
) -> None:
    """EXT-HAND-3: never a fresh episode: a typed error frame, then 4404; the server goes on
    and the loss is counted by cause."""
    store, port = str(tmp_path / "s.db"), _free_port()
    token = _hand_over_one(env, store, port, action, **settings)
    with _serving(env, store, port, **settings) as server:
        error, close = _refused(server, token)
        assert error["type"] == "error" and error["data"]["code"] == code
        assert words in error["data"]["message"]
        assert close == 4404
        with _open(server) as fresh:  # the server goes on
            _receive(fresh)
            assert _ask(fresh, {"type": "reset", "data": {}})["type"] == "observation"
        if cause == "replay_mismatch":
            assert _metric(server, 'openenv_sessions_lost_total{cause="replay_mismatch"}') == 1


def test_a_corrupt_or_foreign_record_ends_only_its_session(tmp_path: Path) -> None:
    """A record that cannot be read back ends its own session with a typed error; the others
    come back."""
    store, port = tmp_path / "s.db", _free_port()
    serving = _serving(keeping_envs.Counter, str(store), port)
    with contextlib.ExitStack() as stack:
        stack.callback(serving.__exit__, None, None, None)
        server = serving.__enter__()
        sockets = [stack.enter_context(_open(server)) for _ in range(3)]
        tokens = [str(_receive(ws)["data"]["resume_token"]) for ws in sockets]
        for ws in sockets:
            _ask(ws, {"type": "reset", "data": {}, "request_id": "1"})
        serving.__exit__(None, None, None)  # handed over while the clients are connected
    with sqlite3.connect(store) as db:
        db.execute("update kept_sessions set record = ? where key_digest = ?", (b"{not json", key_digest(tokens[0])))
        db.execute(
            "update kept_sessions set record = replace(record, '\"version\":1', '\"version\":99') where key_digest = ?",
            (key_digest(tokens[1]),),
        )
    with _serving(keeping_envs.Counter, str(store), port) as server:
        for token, kind in ((tokens[0], "unreadable"), (tokens[1], "of another version")):
            error, close = _refused(server, token)
            assert error["data"]["code"] == "SESSION_NOT_FOUND" and kind in error["data"]["message"]
            assert close == 4404
        with _open(server, tokens[2]) as ws:
            assert _receive(ws)["data"]["resumed"] is True


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    for url in (str(tmp_path / "missing" / "dir" / "s.db"), "redis://127.0.0.1:1/0", "postgres://x/y"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "openenv_anyio",
                "serve",
                "tests.session_store.keeping_envs:Counter",
                "--session-store",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=serve_environment(),
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("openenv-anyio serve: "), done.stderr


def test_durable_without_a_store_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "serve", "tests.session_store.keeping_envs:Counter", "--durable"],
        capture_output=True,
        text=True,
        timeout=60,
        env=serve_environment(),
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "openenv-anyio serve: --durable needs a --session-store"


def test_durable_steps_go_on_when_redis_goes_away(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Redis stops mid-run: steps are still answered, the failure is one log line for the
    session it concerns, and the server serves on."""
    port = _free_port()
    with redis_server(tmp_path) as redis:
        with _serving(keeping_envs.Counter, redis.url(4), port, durable=True) as server:
            with _open(server) as ws:
                _receive(ws)
                _ask(ws, {"type": "reset", "data": {}, "request_id": "1"})
                redis.stop()
                for n in range(2, 5):
                    answer = _ask(ws, {"type": "step", "data": {"add": 1}, "request_id": str(n)})
                    assert answer["type"] == "observation"
                assert answer["data"]["observation"]["count"] == 3
    lines = [r.getMessage() for r in caplog.records if "not written to the session store" in r.getMessage()]
    assert len(lines) == 1, lines


def test_metadata_says_the_server_hands_sessions_over(tmp_path: Path) -> None:
    import urllib.request

    with _serving(Plain, str(tmp_path / "s.db"), _free_port(), durable=True, deterministic=True) as server:
        with urllib.request.urlopen(server.url + "/metadata", timeout=TIMEOUT) as answer:
            metadata = json.loads(answer.read())
    assert metadata["handover"] == {"durable": True}
    assert metadata["restore"] == "replay"  # --deterministic: a plain environment replays


def test_the_dashboard_sees_a_session_that_came_back(tmp_path: Path) -> None:
    """UI-7's ``brought_back``: how the session came back after the restart."""
    store, port = str(tmp_path / "s.db"), _free_port()
    token = _hand_over_one(keeping_envs.AsyncBoard, store, port, {"cell": 1})
    with _serving(keeping_envs.AsyncBoard, store, port) as server:
        with _open(server, token) as ws, _open(server, path="/ws/ui?dashboard=1") as dashboard:
            assert _receive(ws)["data"]["resumed"] is True
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                frame = json.loads(dashboard.recv(timeout=TIMEOUT))
                state = frame.get("episode_state") or {}
                if state.get("session_id") == token.partition(".")[0] and "brought_back" in state:
                    assert state["brought_back"] == "snapshot" and state["step_count"] == 1
                    break
            else:
                pytest.fail("no state_update said the session came back")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class _Restartable:
    """A server started and stopped from a worker thread (stopping blocks, which an async test
    on trio may not do on its own thread)."""

    def __init__(self, env: Any, store: str, port: int) -> None:
        self.args = (env, store, port)
        self.serving: contextlib.AbstractContextManager[RunningServer] | None = None

    async def start(self) -> None:
        self.serving = _serving(*self.args)
        await anyio.to_thread.run_sync(self.serving.__enter__)

    async def stop(self) -> None:
        assert self.serving is not None
        await anyio.to_thread.run_sync(self.serving.__exit__, None, None, None)


@pytest.mark.anyio
@pytest.mark.parametrize("way", sorted(ENVS))
async def test_our_client_resumes_across_a_restart(way: str, tmp_path: Path) -> None:
    """Our client, on both backends: the restart is a resume like any other; the episode
    goes on where it was, each step run once."""
    env, action, count = ENVS[way]
    port = _free_port()
    server = _Restartable(env, str(tmp_path / "s.db"), port)
    policy = ReconnectPolicy(attempts=60, backoff_s=0.05, max_backoff_s=0.25)
    await server.start()
    try:
        async with EnvClient(f"http://127.0.0.1:{port}", reconnect=policy) as client:
            await client.reset(seed=0)
            for n in range(1, 4):
                await client.step(action(n))
            assert client.session is not None
            session_id = client.session.session_id
            await server.stop()
            await server.start()
            result = await client.step(action(4))
            assert count(result.observation) == 4
            assert client.resumes == 1 and client.session.session_id == session_id
    finally:
        await server.stop()
