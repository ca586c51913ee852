"""Full episodes against real servers on loopback: openenv-core's (interop) and ours."""

from __future__ import annotations

import os
import threading
import time

import anyio
import pytest

from openenv_anyio import (
    CapacityReached,
    ConnectionClosedByServer,
    ConnectionDropped,
    EnvClient,
    EnvExecutionError,
    NotConnected,
    RequestValidationError,
    ServerError,
    State,
    StepResult,
)

from .leftovers import client_tasks

pytestmark = pytest.mark.anyio


async def test_full_episode(server_url: str) -> None:
    """WS-RESET-1, WS-STEP-1, WS-STATE-1, WS-RESET-3, WS-CLOSE-1 through the client."""
    async with EnvClient(server_url) as env:
        with anyio.fail_after(10):
            first = await env.reset(seed=1, episode_id="ep-1")
            assert first == StepResult(observation={"echoed": "", "length": 0, "pad": ""}, reward=0.0, done=False)
            assert await env.state() == State(episode_id="ep-1", step_count=0, extra={})
            for count, message in enumerate(["hi", "there", "agent"], start=1):
                result = await env.step({"message": message})
                assert result.observation == {"echoed": message, "length": len(message), "pad": ""}
                assert result.reward == float(len(message)) and result.done is False
                assert (await env.state()).step_count == count
            await env.reset()
            state = await env.state()
            assert state.step_count == 0 and isinstance(state.episode_id, str) and state.episode_id != "ep-1"
            await env.close()
        with pytest.raises(NotConnected):
            await env.step({"message": "after close"})


async def test_error_frames_become_typed_errors(server_url: str) -> None:
    """WS-STEP-2 and WS-ERR-7 answers surface as ServerError subclasses (WS-ERR-8); the
    session continues after each."""
    async with EnvClient(server_url) as env:
        with anyio.fail_after(10):
            await env.reset()
            with pytest.raises(RequestValidationError) as invalid:
                await env.step({"nope": 1})
            assert invalid.value.code == "VALIDATION_ERROR" and invalid.value.errors
            assert invalid.value.extra["errors"] == invalid.value.errors
            with pytest.raises(EnvExecutionError) as failed:
                await env.step({"message": "boom"})
            assert failed.value.code == "EXECUTION_ERROR" and "boom" in failed.value.message
            assert isinstance(failed.value, ServerError)
            assert (await env.step({"message": "ok"})).observation["echoed"] == "ok"


async def test_invalid_requests_are_refused_before_sending(server_url: str) -> None:
    """Frames sent are validated against spec/ (client-frame.json): a negative seed is refused."""
    async with EnvClient(server_url) as env:
        with pytest.raises(ValueError, match="seed"):
            await env.reset(seed=-1)
        with pytest.raises(TypeError):
            await env.step(["not", "an", "object"])
        with anyio.fail_after(10):
            assert (await env.reset(seed=0)).done is False


async def test_two_tasks_stepping_one_client_each_get_their_own_answer(server_url: str) -> None:
    """Concurrent calls on one client are serialised: no library error, no swapped answers."""
    answers: dict[str, list[str]] = {"left": [], "right": []}

    async def agent(name: str) -> None:
        for index in range(30):
            message = f"{name}-{index}"
            result = await env.step({"message": message})
            answers[name].append(result.observation["echoed"])

    async with EnvClient(server_url) as env:
        with anyio.fail_after(20):
            await env.reset()
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(agent, "left")
                task_group.start_soon(agent, "right")
            assert (await env.state()).step_count == 60
    for name, echoed in answers.items():
        assert echoed == [f"{name}-{index}" for index in range(30)]


async def test_many_clients_in_one_task_group(server_url: str) -> None:
    """Structured-concurrency agents: N sessions in one task group, returns collected."""
    returns: dict[int, float] = {}

    async def episode(agent: int) -> None:
        async with EnvClient(server_url) as env:
            await env.reset(seed=agent)
            total = 0.0
            for step in range(5):
                result = await env.step({"message": "x" * (agent + step)})
                total += float(result.reward or 0.0)
            returns[agent] = total

    with anyio.fail_after(30):
        async with anyio.create_task_group() as task_group:
            for agent in range(8):
                task_group.start_soon(episode, agent)
    assert returns == {agent: float(sum(agent + step for step in range(5))) for agent in range(8)}


async def test_an_error_inside_the_block_propagates_unchanged(server_url: str) -> None:
    with pytest.raises(KeyError, match="mine"):
        async with EnvClient(server_url) as env:
            await env.reset()
            raise KeyError("mine")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sync_wrapper_from_a_plain_script(server_url: str, backend: str) -> None:
    threads = threading.active_count()
    with EnvClient(server_url).sync(backend=backend) as env:
        assert env.reset(seed=3).reward == 0.0
        assert env.step({"message": "sync"}).observation["echoed"] == "sync"
        assert env.state().step_count == 1
        with pytest.raises(RequestValidationError):
            env.step({"bad": True})
    # the client's event-loop thread has ended (the server in this process may take a moment
    # to join the session's worker thread, so wait for the count rather than read it once)
    deadline = time.monotonic() + 10
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= threads
    with pytest.raises(NotConnected):
        env.step({"message": "after close"})


async def test_sync_wrapper_in_a_thread_while_an_event_loop_runs(server_url: str) -> None:
    """The blocking face works from a worker thread while the caller's loop keeps running."""
    ticks = 0

    def blocking_agent() -> list[str]:
        assert threading.current_thread() is not threading.main_thread()
        env = EnvClient(server_url).sync()
        try:
            env.reset()
            return [env.step({"message": m}).observation["echoed"] for m in ("a", "b", "c")]
        finally:
            env.close()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.001)
            ticks += 1

    with anyio.fail_after(20):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(ticker)
            echoed = await anyio.to_thread.run_sync(blocking_agent)
            task_group.cancel_scope.cancel()
    assert echoed == ["a", "b", "c"]
    assert ticks > 0


async def test_capacity_error_frame_becomes_capacity_reached(one_session_server_url: str) -> None:
    """WS-CAP-1: the connection beyond the limit gets CapacityReached with the frame's extra
    keys; then the server's close is reported; the first session is unaffected."""
    url = one_session_server_url
    async with EnvClient(url) as first:
        with anyio.fail_after(10):
            await first.reset()
            async with EnvClient(url) as second:
                await anyio.sleep(0.2)  # the error frame and close arrive unrequested
                with pytest.raises(CapacityReached) as caught:
                    await second.reset()
                with pytest.raises(ConnectionClosedByServer) as closed:
                    await second.reset()
                with pytest.raises(ConnectionDropped):
                    await second.reset()
            assert (await first.step({"message": "still mine"})).observation["echoed"] == "still mine"
    assert caught.value.code == "CAPACITY_REACHED"
    assert caught.value.extra == {"active_sessions": 1, "max_sessions": 1}
    assert closed.value.code in (1000, 1013)  # openenv-core 0.3 uses 1000, WS-CAP-1 says 1013


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_many_agents_example(server_url: str, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/many_agents.py runs N sessions in one task group on either backend."""
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).parents[2] / "examples" / "many_agents.py"))
    assert example["main"]([server_url, "--agents", "4", "--steps", "3", "--backend", backend]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[0].startswith("agent 0: return ")
    assert example["main"](["http://127.0.0.1:1", "--agents", "2", "--backend", backend]) == 1
    assert "cannot connect" in capsys.readouterr().err


async def test_idle_client_outlives_three_ping_timeouts(pinging_server_url: str) -> None:
    """WS-PING-1 with real servers: the reader answers the server's pings while the agent
    thinks; after 3x the server's ping timeout the session still works."""
    from .conftest import PING_TIMEOUT_S

    async with EnvClient(pinging_server_url) as env:
        with anyio.fail_after(10):
            await env.reset()
            await anyio.sleep(3 * PING_TIMEOUT_S + 0.2)
            assert (await env.step({"message": "awake"})).observation["echoed"] == "awake"
            assert env._transport is not None and env._transport.pings_answered >= 2  # it was pinged


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc (Linux)")
async def test_open_close_cycles_leave_nothing_behind(server_url: str) -> None:
    """Clients opened and closed in a loop leave no task and no socket behind."""
    async with EnvClient(server_url) as env:  # warm-up: imports, server-side caches
        await env.reset()
    await anyio.sleep(0.1)
    files_before = len(os.listdir("/proc/self/fd"))
    with anyio.fail_after(30):
        for _ in range(20):
            async with EnvClient(server_url) as env:
                await env.reset()
                await env.step({"message": "cycle"})
        await anyio.sleep(0.2)  # the server (in this process) closes its side too
    assert client_tasks() == []
    assert len(os.listdir("/proc/self/fd")) <= files_before + 2
