"""The adapters' answers make spec-valid frames (WS-OBS-1, WS-STATE-1, WS-STEP-2).

A sans-IO walk of what a server does with an adapter: decode the client's frame, check a
step's data against the environment's action schema, call the environment, lift ``reward``,
``done`` and ``metadata`` out, encode the answer, and decode it again as a client would
(which validates it against ``spec/v1``).
"""

from __future__ import annotations

from typing import Any

import pytest

from openenv_anyio.core import (
    Error,
    ErrorCode,
    Observation,
    ProtocolError,
    Reset,
    State,
    StateRequest,
    Step,
    Validator,
    decode_client_frame,
    decode_server_frame,
    encode_frame,
)
from openenv_anyio.environment import lift_observation
from openenv_anyio.envs.loading import resolve_env_target


def _answer(env: Any, action_validator: Validator, text: str) -> Any:
    """One request through the environment, as a server answers it, decoded as a client reads it."""
    frame = decode_client_frame(text)
    try:
        if isinstance(frame, Reset):
            reply = env.reset(**frame.kwargs)
        elif isinstance(frame, Step):
            action_validator.check(frame.action, what="action")
            reply = env.step(frame.action)
        else:
            assert isinstance(frame, StateRequest)
            return decode_server_frame(encode_frame(State(env.state)))
    except ProtocolError as error:
        return decode_server_frame(encode_frame(Error.from_protocol_error(error)))
    lifted = lift_observation(reply)  # the server's own split (an adapter may have split it already)
    return decode_server_frame(
        encode_frame(Observation(lifted.observation, lifted.reward, lifted.done, metadata=lifted.sent_metadata))
    )


@pytest.mark.parametrize(
    ("target", "good_step", "bad_step", "pointer"),
    [
        (
            "gymnasium:CartPole-v1",
            '{"type":"step","data":{"action":1}}',
            '{"type":"step","data":{"action":7}}',
            "/action",
        ),
        (
            "gymnasium:Pendulum-v1",
            '{"type":"step","data":{"action":[0.25]}}',
            '{"type":"step","data":{"action":[9]}}',
            "/action/0",
        ),
        (
            "adapter_samples:GridWalkEnv",
            '{"type":"step","data":{"action":[1,1]}}',
            '{"type":"step","data":{"action":[1,"x"]}}',
            "/action/1",
        ),
        (
            "adapter_samples:EchoEnv",
            '{"type":"step","data":{"message":"hey"}}',
            '{"type":"step","data":{"message":["hey"]}}',
            "/message",
        ),
    ],
)
def test_answers_are_spec_valid_frames(target: str, good_step: str, bad_step: str, pointer: str) -> None:
    factory = resolve_env_target(target)
    action_validator = Validator(factory.action_schema)
    env = factory()
    try:
        reset = _answer(env, action_validator, '{"type":"reset","data":{"seed":2,"episode_id":"frames-1"}}')
        assert isinstance(reset, Observation) and reset.done is False
        state = _answer(env, action_validator, '{"type":"state"}')
        assert isinstance(state, State) and state.episode_id == "frames-1" and state.step_count == 0
        step = _answer(env, action_validator, good_step)
        assert isinstance(step, Observation) and isinstance(step.reward, float)
        assert not set(step.observation) & {"reward", "done", "metadata"}
        refused = _answer(env, action_validator, bad_step)
        assert isinstance(refused, Error) and refused.code == ErrorCode.VALIDATION_ERROR
        assert refused.extra["errors"][0]["pointer"] == pointer
        after = _answer(env, action_validator, '{"type":"state"}')
        assert isinstance(after, State) and after.step_count == 1  # the refused step never ran
    finally:
        env.close()


def test_the_adapters_own_refusal_is_a_validation_error_frame() -> None:
    """What the schema cannot express (uneven per-element bounds) the adapter refuses itself."""
    factory = resolve_env_target("adapter_samples:GridWalkEnv")
    env = factory()
    let_through = Validator({})  # skip the schema: the adapter's check alone
    _answer(env, let_through, '{"type":"reset"}')
    refused = _answer(env, let_through, '{"type":"step","data":{"action":[3,0]}}')
    assert isinstance(refused, Error) and refused.code == ErrorCode.VALIDATION_ERROR
    assert refused.message == "Invalid action at /action/0: 3 is not in [0, 2] (action space MultiDiscrete([3 5]))"
    assert refused.extra["errors"][0]["loc"] == ["action", 0]
    env.close()
