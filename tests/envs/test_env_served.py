"""Existing environments served unchanged by our server, driven by the real openenv-core client.

``openenv-anyio serve gymnasium:CartPole-v1`` and ``serve mypkg:MyOpenEnvEnv`` end to end:
a real Hypercorn server on a loopback port, openenv-core 0.3's ``GenericEnvClient``, a whole
episode, and an invalid action answered with VALIDATION_ERROR naming the space (WS-STEP-2).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from serve_process import serve_environment, serve_process
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_anyio import server
from openenv_anyio.envs.loading import resolve_env_target


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a server for a target; every server started is shut down at the end."""
    with_blocks: list[Any] = []

    def start(target: str) -> str:
        config = server.ServerConfig(host="127.0.0.1", port=0)
        block = server.EnvServer(resolve_env_target(target), config).run_in_thread()
        running = block.__enter__()
        with_blocks.append(block)
        return str(running.url)

    yield start
    for block in reversed(with_blocks):
        block.__exit__(None, None, None)


def test_cartpole_episode_through_the_real_client(serve: Any) -> None:
    url = serve("gymnasium:CartPole-v1")
    schema = httpx.get(f"{url}/schema", timeout=10).json()
    assert schema["action"]["properties"]["action"]["maximum"] == 1
    with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as env:
        result = env.reset(seed=4)
        assert result.done is False and len(result.observation["observation"]) == 4
        steps = 0
        while not result.done:
            observation = result.observation["observation"]
            result = env.step({"action": 1 if observation[2] + observation[3] > 0 else 0})
            assert result.reward == 1.0
            steps += 1
            assert steps <= 500
        assert env.state()["step_count"] == steps
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR") as caught:
            env.step({"action": 2})
        assert "Discrete(2)" in str(caught.value) and "/action" in str(caught.value)


def test_openenv_core_environment_through_the_real_client(serve: Any) -> None:
    url = serve("adapter_samples:EchoEnv")
    schema = httpx.get(f"{url}/schema", timeout=10).json()
    assert schema["action"]["title"] == "EchoAction"
    with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as env:
        env.reset(episode_id="served-1")
        result = env.step({"message": "ab", "repeat": 3})
        assert result.observation == {"echoed": "ababab", "length": 6} and result.reward == 6.0
        state = env.state()
        assert state["episode_id"] == "served-1" and state["step_count"] == 1
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR"):
            env.step({"message": 5})


def test_refusal_only_the_adapter_can_see_is_a_validation_error(serve: Any) -> None:
    """WS-STEP-2: MultiDiscrete([3, 5]) takes [3, 0] by the (uniform) schema bound, not by the space."""
    url = serve("adapter_samples:GridWalkEnv")
    with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as env:
        env.reset(seed=1)
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR") as caught:
            env.step({"action": [3, 0]})
        assert "/data/action/0" in str(caught.value) and "MultiDiscrete" in str(caught.value)
        assert env.step({"action": [2, 4]}).done in (True, False)


def test_an_env_without_concurrent_sessions_is_capped_at_one(serve: Any) -> None:
    """openenv-core's SUPPORTS_CONCURRENT_SESSIONS = False caps the server at one session (WS-CAP-1)."""
    url = serve("adapter_samples:EchoEnv")
    with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as first:
        first.reset()
        with pytest.raises(Exception, match=r"CAPACITY_REACHED|1013|capacity"):
            with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as second:
                second.reset()


def test_an_openenv_core_env_calling_sys_exit_ends_only_its_session(serve: Any) -> None:
    """SRV-FAULT-1: sys.exit() in an openenv-core env's step: EXECUTION_ERROR, close 1011;
    the server goes on and the next session steps normally."""
    url = serve("adapter_samples:QuitOnRequest")
    with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=10) as ws:
        ws.send(json.dumps({"type": "reset"}))
        ws.recv(timeout=10)
        ws.send(json.dumps({"type": "step", "data": {"message": "exit"}}))
        answer = json.loads(ws.recv(timeout=10))
        assert answer["data"]["code"] == "EXECUTION_ERROR" and "SystemExit" in answer["data"]["message"]
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    with GenericEnvClient(base_url=url, message_timeout_s=10).sync() as env:
        env.reset()
        assert env.step({"message": "ok"}).observation["echoed"] == "ok"


@pytest.mark.parametrize(
    ("target", "action", "loc", "fault"),
    [
        ("adapter_samples:CapitalsOnly", {"message": "quiet"}, ["message"], "must be upper case"),
        ("adapter_samples:GridWalkEnv", {"action": [3, 0]}, ["action", 0], "MultiDiscrete"),
    ],
    ids=["pydantic-validator", "gymnasium-space"],
)
def test_an_action_the_adapter_refuses_is_422_over_http_as_over_ws(
    serve: Any, target: str, action: dict[str, Any], loc: list[Any], fault: str
) -> None:
    """HTTP-4, WS-STEP-2: an action that passes the schema but that the adapter refuses when
    the environment runs it is a 422 on ``POST /step`` (as upstream's server answers) and a
    VALIDATION_ERROR on ``/ws``, at the same place."""
    url = serve(target)
    answer = httpx.post(f"{url}/step", json={"action": action}, timeout=10)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert detail[0]["loc"] == ["body", "action", *loc] and fault in detail[0]["msg"]
    with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=10) as ws:
        ws.send(json.dumps({"type": "reset"}))
        ws.recv(timeout=10)
        ws.send(json.dumps({"type": "step", "data": action}))
        refusal = json.loads(ws.recv(timeout=10))["data"]
    assert refusal["code"] == "VALIDATION_ERROR" and fault in refusal["message"]
    assert refusal["errors"][0]["loc"] == ["data", *loc]


def test_serve_command_takes_the_app_upstream_built() -> None:
    """``openenv-anyio serve pkg.server.app:app``: the app's session limit, named where it comes from
    (openenv-core 0.3 keeps no env_name: the environment class names it)."""
    with serve_process("interop.shout_env.server.app:app") as served:
        served.wait_for_line(
            r"at most 2 concurrent sessions: ShoutEnvironment allows no more "
            r"\(max_concurrent_envs=2 in its create_app\)"
        )
        assert httpx.get(f"{served.url}/schema", timeout=10).json()["action"]["title"] == "ShoutAction"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "adapter_samples:plain_fastapi_app",
            "adapter_samples:plain_fastapi_app is an ASGI application (FastAPI) "
            "that upstream OpenEnv's create_app did not build",
        ),
        (
            "interop.shout_env.server.app:apps",
            "'interop.shout_env.server.app' has no attribute 'apps'; did you mean app?",
        ),
    ],
)
def test_serve_command_refuses_a_bad_app_in_one_line(target: str, message: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "serve", target, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=serve_environment(),
        cwd=Path(__file__).parent,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"openenv-anyio serve: {message}") and completed.stderr.count("\n") == 1


def test_serve_command_keeps_the_app_s_idle_timeout() -> None:
    """``ConcurrencyConfig(session_timeout=1.0)`` in the app: an idle session closes with 4408
    (WS-IDLE-1), as ``--session-timeout 1`` would make it; the option still wins over the app."""
    for extra, idle_s in (((), 1.0), (("--session-timeout", "30"), None)):
        with (
            serve_process("interop.shout_env.server.app:timed_app", *extra) as served,
            connect(served.ws_url, open_timeout=10) as ws,
        ):
            ws.send(json.dumps({"type": "reset"}))
            ws.recv(timeout=10)
            if idle_s is None:
                time.sleep(3 * 1.0)  # three times the app's timeout: the option's 30 s hold
                ws.send(json.dumps({"type": "state"}))
                assert json.loads(ws.recv(timeout=10))["type"] == "state"
                continue
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408
