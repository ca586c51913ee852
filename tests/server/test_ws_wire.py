"""Every row of the wire reference's ``/ws`` table, against a real server (PROTOCOL.md 2-5)."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio.envs.echo import EchoEnv

from .conftest import TIMEOUT, ask, running, wait_for, ws_connect


@pytest.fixture(scope="module")
def echo_server():
    with running(EchoEnv) as server:
        yield server


@pytest.fixture
def ws(echo_server):
    with ws_connect(echo_server) as connection:
        yield connection


def test_reset_with_seed_answers_observation(ws) -> None:
    """WS-RESET-1, WS-OBS-1: reward and done lifted out of the observation."""
    assert ask(ws, {"type": "reset", "data": {"seed": 1}}) == {
        "type": "observation",
        "data": {"observation": {"echoed": "", "length": 0, "pad": ""}, "reward": 0.0, "done": False},
    }


def test_reset_without_data(ws) -> None:
    """WS-RESET-1: ``data`` is optional."""
    assert ask(ws, {"type": "reset"})["type"] == "observation"


def test_step_echoes_and_rewards_length(ws) -> None:
    """WS-STEP-1."""
    ask(ws, {"type": "reset"})
    assert ask(ws, {"type": "step", "data": {"message": "hi"}}) == {
        "type": "observation",
        "data": {"observation": {"echoed": "hi", "length": 2, "pad": ""}, "reward": 2.0, "done": False},
    }


def test_state_counts_steps(ws) -> None:
    """WS-STATE-1."""
    ask(ws, {"type": "reset"})
    ask(ws, {"type": "step", "data": {"message": "hi"}})
    answer = ask(ws, {"type": "state"})
    assert answer["type"] == "state"
    assert isinstance(answer["data"]["episode_id"], str)
    assert answer["data"]["step_count"] == 1


def test_reset_with_episode_id_then_state(ws) -> None:
    """WS-RESET-3."""
    ask(ws, {"type": "reset", "data": {"episode_id": "ep-1", "seed": 5}})
    assert ask(ws, {"type": "state"}) == {"type": "state", "data": {"episode_id": "ep-1", "step_count": 0}}


def test_invalid_json_keeps_session(ws) -> None:
    """WS-ERR-1, WS-ERR-9."""
    answer = ask(ws, "not json")
    assert answer["data"]["code"] == "INVALID_JSON"
    assert answer["data"]["message"].startswith("Invalid JSON")
    assert ask(ws, {"type": "reset"})["type"] == "observation"


def test_unknown_type(ws) -> None:
    """WS-ERR-3."""
    assert ask(ws, {"type": "bogus"}) == {
        "type": "error",
        "data": {"message": "Unknown message type: bogus", "code": "UNKNOWN_TYPE"},
    }
    assert ask(ws, {"data": {}})["data"]["code"] == "UNKNOWN_TYPE"
    assert ask(ws, {"type": "state"})["type"] == "state"


def test_deprecated_action_alias_is_refused_with_hint(ws) -> None:
    """WS-STEP-4: ``{"type":"step","action":...}`` is a VALIDATION_ERROR that points at ``data``."""
    answer = ask(ws, {"type": "step", "action": {"message": "hi"}})
    assert answer["data"]["code"] == "VALIDATION_ERROR"
    assert '"data"' in answer["data"]["message"]
    assert answer["data"]["errors"]


def test_action_not_matching_schema(ws) -> None:
    """WS-STEP-2: the env's action schema is enforced, with JSON pointers."""
    ask(ws, {"type": "reset"})
    answer = ask(ws, {"type": "step", "data": {"nope": 1}})
    assert answer["data"]["code"] == "VALIDATION_ERROR"
    keywords = {entry["type"] for entry in answer["data"]["errors"]}
    assert {"required", "additionalProperties"} <= keywords
    bad_type = ask(ws, {"type": "step", "data": {"message": 5}})
    assert bad_type["data"]["errors"][0]["pointer"] == "/data/message"
    assert bad_type["data"]["errors"][0]["loc"] == ["data", "message"]
    assert "/data/message" in bad_type["data"]["message"]
    assert ask(ws, {"type": "state"})["data"]["step_count"] == 0, "the env never saw the bad actions"


def test_extra_top_level_member(ws) -> None:
    """WS-CONN-4, WS-ERR-4."""
    assert ask(ws, {"type": "state", "extra": 1})["data"]["code"] == "VALIDATION_ERROR"


def test_negative_seed(ws) -> None:
    """WS-RESET-2, WS-ERR-4."""
    answer = ask(ws, {"type": "reset", "data": {"seed": -1}})
    assert answer["data"]["code"] == "VALIDATION_ERROR"
    assert answer["data"]["errors"][0]["pointer"] == "/data/seed"


def test_close_frame_closes_with_1000(ws) -> None:
    """WS-CLOSE-1: no answer, close code 1000."""
    ws.send(json.dumps({"type": "close"}))
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_step_before_reset_is_up_to_the_env(ws) -> None:
    """WS-STEP-3."""
    assert ask(ws, {"type": "step", "data": {"message": "x"}})["type"] == "observation"


def test_non_object_json_is_validation_error_and_session_continues(ws) -> None:
    """WS-ERR-2 (differs from openenv-core 0.3, which closes)."""
    for value in ([1, 2], "s", 3, None):
        assert ask(ws, json.dumps(value))["data"]["code"] == "VALIDATION_ERROR"
    assert ask(ws, {"type": "state"})["type"] == "state"


def test_binary_frame_is_invalid_json_and_session_continues(ws) -> None:
    """WS-ERR-5 (differs from openenv-core 0.3, which closes)."""
    assert ask(ws, json.dumps({"type": "state"}).encode())["data"]["code"] == "INVALID_JSON"
    assert ask(ws, {"type": "state"})["type"] == "state"


def test_no_subprotocol_selected(echo_server) -> None:
    """WS-CONN-1: a subprotocol the server does not speak is never selected."""
    with ws_connect(echo_server) as plain:
        assert plain.subprotocol is None
        assert ask(plain, {"type": "reset"})["type"] == "observation"


def test_pipelined_requests_are_answered_in_order(ws) -> None:
    """WS-ORDER-1: several requests before reading; answers in request order."""
    ws.send(json.dumps({"type": "reset", "data": {"episode_id": "pipe"}}))
    for index in range(20):
        ws.send(json.dumps({"type": "step", "data": {"message": "m" * index}}))
    ws.send(json.dumps({"type": "state"}))
    answers = [json.loads(ws.recv(timeout=TIMEOUT)) for _ in range(22)]
    assert answers[0]["data"]["observation"]["length"] == 0
    assert [a["data"]["observation"]["length"] for a in answers[1:21]] == list(range(20))
    assert answers[21]["data"] == {"episode_id": "pipe", "step_count": 20}


def test_sessions_are_isolated(echo_server) -> None:
    """WS-CONN-2."""
    with ws_connect(echo_server) as first, ws_connect(echo_server) as second:
        ask(first, {"type": "reset", "data": {"episode_id": "one"}})
        ask(second, {"type": "reset", "data": {"episode_id": "two"}})
        ask(first, {"type": "step", "data": {"message": "a"}})
        assert ask(first, {"type": "state"})["data"] == {"episode_id": "one", "step_count": 1}
        assert ask(second, {"type": "state"})["data"] == {"episode_id": "two", "step_count": 0}


def test_oversize_frame_closes_with_1009() -> None:
    """WS-ERR-6: over ``max_message_size_mb`` -> close 1009; other sessions unaffected."""
    with running(EchoEnv, max_message_size_mb=0.01) as server:
        with ws_connect(server) as other, ws_connect(server) as ws:
            ask(other, {"type": "reset"})
            ws.send(json.dumps({"type": "step", "data": {"message": "x" * 20_000}}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
            assert ask(other, {"type": "step", "data": {"message": "x" * 5_000}})["data"]["reward"] == 5000.0


def test_default_limit_accepts_frames_over_16_mib() -> None:
    """WS-ERR-6: the default inbound limit is 100 MiB, not uvicorn's 16 MiB."""
    with running(EchoEnv) as server, ws_connect(server, max_size=None) as ws:
        message = "y" * (17 * 1024 * 1024)
        answer = ask(ws, {"type": "step", "data": {"message": message}})
        assert answer["data"]["observation"]["length"] == len(message)


def test_capacity_error_then_close_1013() -> None:
    """WS-CAP-1: CAPACITY_REACHED with active/max sessions, then close 1013."""
    with running(EchoEnv, max_concurrent_envs=1) as server, ws_connect(server) as first:
        ask(first, {"type": "reset"})
        with ws_connect(server) as second:
            refusal = json.loads(second.recv(timeout=TIMEOUT))
            assert refusal == {
                "type": "error",
                "data": {
                    "message": "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
                    "code": "CAPACITY_REACHED",
                    "active_sessions": 1,
                    "max_sessions": 1,
                },
            }
            with pytest.raises(ConnectionClosed) as closed:
                second.recv(timeout=TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert ask(first, {"type": "state"})["type"] == "state"
        first.close()
        wait_for(lambda: server.stats()["active_sessions"] == 0)  # freed once the close is seen
        with ws_connect(server) as third:
            assert ask(third, {"type": "reset"})["type"] == "observation"


def test_pydantic_action_model_over_ws() -> None:
    """WS-STEP-2 with a pydantic action model: schema faults, and model faults, as VALIDATION_ERROR."""
    from .envs import PydanticEnv

    with running(PydanticEnv) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        assert ask(ws, {"type": "step", "data": {"dx": 3}})["data"]["observation"] == {"x": 3, "action_type": "Move"}
        wrong = ask(ws, {"type": "step", "data": {"dx": "far"}})
        assert wrong["data"]["code"] == "VALIDATION_ERROR"
        assert wrong["data"]["errors"][0]["pointer"] == "/data/dx"


def test_reset_parameters_the_env_does_not_take_are_dropped() -> None:
    """WS-RESET-1: like the reference server, unknown reset parameters are filtered out."""
    from .envs import PlainResetEnv

    with running(PlainResetEnv) as server, ws_connect(server) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 1, "episode_id": "x"}})["data"]["observation"] == {
            "plain": True
        }
