"""Upstream's client API (``openenv_anyio.compat``) while the server restarts, against a real
``openenv-anyio serve`` process stopped and started again on its port, on both loops the
blocking mode runs on: the native client underneath keeps resuming through refused
connections (EXT-HAND-6); a server that does not have the session gives the typed
``SessionNotFound``, never a fresh episode in its place; ``reset`` then starts over on a new
session, as upstream's does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from restartable import Restartable, restartable_server

from openenv_anyio.client import ConnectionDropped, ReconnectPolicy, SessionNotFound

from .typed_clients import TinyAction, TinyEnv

PATIENT = ReconnectPolicy(backoff_s=0.05, max_backoff_s=0.2, within_s=90)
TIMEOUT_S = 120


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Restartable]:
    with restartable_server("compat.envs:TinyEcho", tmp_path / "server") as running:
        yield running


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_step_across_a_restart_without_a_store_is_session_not_found(server: Restartable, backend: str) -> None:
    env = TinyEnv(base_url=server.url, websocket_ping_interval_s=None, reconnect=PATIENT, backend=backend)
    try:
        env.reset(episode_id="before")
        env.step(TinyAction(message="one"))
        server.stop(kill=True)
        outcome: list[BaseException | object] = []

        def step_on() -> None:
            try:
                outcome.append(env.step(TinyAction(message="two")))
            except BaseException as exc:
                outcome.append(exc)

        stepping = threading.Thread(target=step_on)
        stepping.start()
        stepping.join(1.0)  # resuming meanwhile: nothing listens on the port
        assert stepping.is_alive() and not outcome
        server.start()
        stepping.join(TIMEOUT_S)
        assert len(outcome) == 1 and type(outcome[0]) is SessionNotFound, outcome
        with pytest.raises(ConnectionDropped):
            env.state()
        env.reset(episode_id="after")  # a reset starts over on a new session
        env.step(TinyAction(message="three"))
        state = env.state()
        assert (state.episode_id, state.step_count) == ("after", 1)
    finally:
        env.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_episode_goes_on_across_a_restart_of_serve_with_a_session_store(tmp_path: Path, backend: str) -> None:
    """EXT-HAND-2 through upstream's API: SIGTERM hands the session over, the restarted server
    on the same store takes it back, and the blocking calls go on as if nothing happened."""
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    serving = restartable_server(
        "compat.envs:TinyEcho", tmp_path / "server", "--session-store", store, "--deterministic"
    )
    with serving as server:
        env = TinyEnv(base_url=server.url, websocket_ping_interval_s=None, reconnect=PATIENT, backend=backend)
        try:
            env.reset(episode_id="kept")
            env.step(TinyAction(message="one"))
            env.step(TinyAction(message="two"))
            server.restart()
            assert env.step(TinyAction(message="three")).observation.echoed_message == "three"
            state = env.state()
            assert (state.episode_id, state.step_count) == ("kept", 3)
            assert env.native is not None and env.native.resumes == 1
        finally:
            env.close()
