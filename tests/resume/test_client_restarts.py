"""The client while its server restarts (EXT-HAND-6), against real ``openenv-anyio serve``
processes stopped and started again on one port, on both anyio backends.

A resume is tried again through a refused connection and through a draining server's 1013
close, within the reconnect policy's ``within_s``. With ``--session-store`` the restarted
server takes the session back and the episode goes on, each step run once (EXT-HAND-2);
one whose replay comes out otherwise ends with the typed :class:`ReplayMismatch`
(EXT-HAND-3). A server that does not have the session (one without a store: a restart
ends every session) answers 4404, and the caller gets the typed :class:`SessionNotFound`,
never :class:`ResumeFailed` or a fresh episode.
"""

from __future__ import annotations

import contextlib
import functools
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from serve_process import ServeProcess, serve_process

from openenv_anyio.client import (
    ConnectionDropped,
    EnvClient,
    EnvClientError,
    ReconnectPolicy,
    ReplayMismatch,
    ResumeFailed,
    SessionNotFound,
)
from tests.session_store.redis_server import redis_server

from .cutting_proxy import CuttingProxy

pytestmark = pytest.mark.anyio

TIMEOUT_S = 120
TARGET = "resume.envs:SlowStepper"  # ``{"sleep": S}`` makes a step take S seconds
#: waits short enough to see every phase of a restart, a budget long enough for a busy machine
PATIENT = ReconnectPolicy(backoff_s=0.05, max_backoff_s=0.2, within_s=90)


class Servers:
    """``openenv-anyio serve`` processes started one after another, each stopped at the end."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()

    def start(self, *args: str, target: str = TARGET) -> ServeProcess:
        return self._stack.enter_context(serve_process(target, "--log-format", "json", *args))

    def redis(self, folder: Path) -> str:
        """A real redis-server for the session store, running until the end; its URL."""
        return self._stack.enter_context(redis_server(folder)).url(3)

    def proxy(self, port: int) -> tuple[CuttingProxy, str]:
        """A cutting proxy in front of the port (runs until the end), and its URL."""
        cutting = CuttingProxy(("127.0.0.1", port))
        return cutting, self._stack.enter_context(cutting.running())

    def close(self) -> None:
        self._stack.close()


@pytest.fixture
def servers() -> Iterator[Servers]:
    started = Servers()
    try:
        yield started
    finally:
        started.close()


async def step_into(env: EnvClient, action: dict[str, Any], outcome: list[Any]) -> None:
    """Step (in a task of the test's), keeping the answer or the client error in ``outcome``."""
    try:
        outcome.append(await env.step(action))
    except EnvClientError as exc:
        outcome.append(exc)


def refusals(server: ServeProcess, code: int) -> list[dict[str, Any]]:
    return [e for e in server.json_events() if e.get("event") == "connection_refused" and e.get("close_code") == code]


async def test_resuming_goes_on_while_nothing_listens_then_says_session_not_found(servers: Servers) -> None:
    """The server is killed: the client's resume meets refused connections and keeps trying;
    a server started on the same port without the session answers 4404: SessionNotFound."""
    with anyio.fail_after(TIMEOUT_S):
        first = await anyio.to_thread.run_sync(servers.start)
        async with EnvClient(first.url, reconnect=PATIENT, ping_interval_s=None) as env:
            await env.reset(episode_id="killed")
            await env.step({"n": 1})
            await anyio.to_thread.run_sync(first.stop, signal.SIGKILL)
            failure: list[object] = []
            async with anyio.create_task_group() as group:
                group.start_soon(step_into, env, {"n": 2}, failure)
                await anyio.sleep(1.0)  # a few tries refused: nothing listens on the port
                assert not failure, failure
                await anyio.to_thread.run_sync(servers.start, "--port", str(first.port))
            assert len(failure) == 1 and type(failure[0]) is SessionNotFound, failure
            with pytest.raises(ConnectionDropped):
                await env.state()
            assert env.resumes == 0


async def test_resuming_goes_on_through_a_draining_server(servers: Servers) -> None:
    """The connection breaks, and the server drains (a long request keeps it draining): the
    resume is closed with 1013 and tried again, then meets no server at all, then the next
    server, which does not have the session: SessionNotFound."""
    with anyio.fail_after(TIMEOUT_S):
        first = await anyio.to_thread.run_sync(servers.start, "--drain-timeout", "30")
        proxy, through = await anyio.to_thread.run_sync(servers.proxy, first.port)
        async with (
            EnvClient(through, reconnect=PATIENT, ping_interval_s=None) as env,
            EnvClient(first.url, reconnect=False) as busy,
        ):
            await env.reset(episode_id="drained")
            await env.step({"n": 1})
            await busy.reset()
            failure: list[object] = []
            async with anyio.create_task_group() as group:
                group.start_soon(busy.step, {"sleep": 4})  # keeps the server draining
                await anyio.sleep(0.5)  # the long step has started
                await anyio.to_thread.run_sync(proxy.cut_all)
                first.process.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(first.wait_for_line, '"event": "server_draining"')
                group.start_soon(step_into, env, {"n": 2}, failure)
                await anyio.to_thread.run_sync(first.process.wait)  # after the long step
                assert not failure, failure
                assert refusals(first, 1013), "the resume never met the draining server"
                await anyio.sleep(0.5)  # a few tries with nothing listening
                assert not failure, failure
                await anyio.to_thread.run_sync(servers.start, "--port", str(first.port))
        assert len(failure) == 1 and type(failure[0]) is SessionNotFound, failure


async def test_the_time_budget_ends_resuming_with_resume_failed(servers: Servers) -> None:
    """``within_s`` bounds the tries: a server that never comes back gives ResumeFailed, whose
    message says how many tries over how long, and whose cause is the last refusal."""
    policy = ReconnectPolicy(backoff_s=0.05, max_backoff_s=0.1, within_s=1.0)
    with anyio.fail_after(TIMEOUT_S):
        first = await anyio.to_thread.run_sync(servers.start)
        async with EnvClient(first.url, reconnect=policy, ping_interval_s=None) as env:
            await env.reset()
            await anyio.to_thread.run_sync(first.stop, signal.SIGKILL)
            with pytest.raises(ResumeFailed) as failed:
                await env.step({"n": 1})
    assert "attempt(s) in" in str(failed.value) and isinstance(failed.value.cause, ConnectionError)
    tries = int(str(failed.value).split(" attempt(s)")[0].rsplit(" ", 1)[1])
    assert tries > 3


@pytest.mark.parametrize(
    ("target", "store"),
    [("resume.envs:KeptCounter", "sqlite"), ("resume.envs:ReplayedCounter", "redis")],
    ids=["snapshot-sqlite", "replay-redis"],
)
async def test_a_session_resumes_across_a_restart_of_serve_with_a_session_store(
    servers: Servers, target: str, store: str, tmp_path: Path
) -> None:
    """EXT-HAND-1, EXT-HAND-2, EXT-HAND-6: SIGTERM hands the session over (1012); the client
    resumes through the refusals while no server listens; the next server on the store takes
    the session back: the same session, its episode, its step count, one more step run once."""
    url = f"sqlite:///{tmp_path / 'sessions.db'}" if store == "sqlite" else servers.redis(tmp_path)
    serve = functools.partial(servers.start, "--session-store", url, target=target)
    with anyio.fail_after(TIMEOUT_S):
        first = await anyio.to_thread.run_sync(serve)
        async with EnvClient(first.url, reconnect=PATIENT, ping_interval_s=None) as env:
            await env.reset(episode_id="kept")
            for n in range(1, 4):
                assert (await env.step({"n": n})).observation["steps"] == n
            assert env.session is not None
            session_id = env.session.session_id
            await anyio.to_thread.run_sync(first.stop, signal.SIGTERM)
            assert any(e.get("event") == "session_exported" for e in first.json_events()), first.lines[-5:]
            answers: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(step_into, env, {"n": 4}, answers)
                await anyio.sleep(0.5)  # a few tries refused: nothing listens on the port
                assert not answers
                await anyio.to_thread.run_sync(functools.partial(serve, "--port", str(first.port)))
            assert answers[0].observation["steps"] == 4
            state = await env.state()
            assert (state.episode_id, state.step_count) == ("kept", 4)
            assert env.resumes == 1 and env.session.session_id == session_id and env.session.resumed


async def test_a_replay_that_comes_out_otherwise_is_replay_mismatch(servers: Servers, tmp_path: Path) -> None:
    """EXT-HAND-3: an environment that says it is deterministic and is not: the restarted
    server's replay differs, and the caller gets ReplayMismatch (a ResumeFailed), never a
    different episode."""
    serve = functools.partial(
        servers.start, "--session-store", f"sqlite:///{tmp_path / 's.db'}", target="resume.envs:DriftingCounter"
    )
    with anyio.fail_after(TIMEOUT_S):
        first = await anyio.to_thread.run_sync(serve)
        async with EnvClient(first.url, reconnect=PATIENT, ping_interval_s=None) as env:
            await env.reset(episode_id="drifting")
            await env.step({"n": 1})
            await anyio.to_thread.run_sync(first.stop, signal.SIGTERM)
            await anyio.to_thread.run_sync(functools.partial(serve, "--port", str(first.port)))
            with pytest.raises(ReplayMismatch) as failed:
                await env.step({"n": 2})
            with pytest.raises(ConnectionDropped):
                await env.state()
    assert isinstance(failed.value, ResumeFailed) and "REPLAY_MISMATCH" in str(failed.value)
