"""openenv-core environments served unchanged (``openenv_anyio.envs.openenv_core``).

The environments are written on the real openenv-core package (``adapter_samples``). The
adapter must answer what openenv-core's own server would: the same observation fields, the
same schemas, the same state, the same refusal of an invalid action (WS-STEP-2, WS-OBS-1).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
import trio
from adapter_samples import (
    AsyncCountEnv,
    CountAction,
    CountObservation,
    CountState,
    EchoAction,
    EchoEnv,
    EchoObservation,
    EchoState,
    UntypedEnv,
    make_echo_env,
)
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import Observation, State

from openenv_anyio.core import ErrorCode, ProtocolError, Validator
from openenv_anyio.environment import LiftedObservation
from openenv_anyio.envs.errors import ActionRejected, EnvTargetError
from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv, is_openenv_core_environment


def test_models_come_from_the_generic_parameters() -> None:
    served = OpenEnvCoreEnv.wrap(EchoEnv)
    assert served.__name__ == "EchoEnv" and issubclass(served, OpenEnvCoreEnv)
    assert (served.action_model, served.observation_model, served.state_model) == (
        EchoAction,
        EchoObservation,
        EchoState,
    )
    assert served.action_schema == EchoAction.model_json_schema()
    assert served.observation_schema == EchoObservation.model_json_schema()
    assert served.state_schema == EchoState.model_json_schema()
    assert served.metadata == {"name": "EchoEnv", "description": "EchoEnv environment", "version": "1.0.0"}
    assert served.NON_BLOCKING is False


def test_models_come_from_the_annotations() -> None:
    served = OpenEnvCoreEnv.wrap(AsyncCountEnv)
    assert (served.action_model, served.observation_model, served.state_model) == (
        CountAction,
        CountObservation,
        CountState,
    )


def test_an_environment_without_an_action_model_is_a_target_error() -> None:
    with pytest.raises(EnvTargetError, match="cannot tell the Action model of UntypedEnv"):
        OpenEnvCoreEnv.wrap(UntypedEnv)
    served = OpenEnvCoreEnv.wrap(UntypedEnv, action_model=EchoAction)
    assert (served.observation_model, served.state_model) == (Observation, State)


def test_a_session_through_the_adapter_matches_openenv_core_serialisation() -> None:
    served = OpenEnvCoreEnv.wrap(EchoEnv)
    env = served()
    inner = env.env
    assert isinstance(inner, EchoEnv)
    reset = env.reset(seed=4, episode_id="ep-9", unknown_option=1)
    assert inner.received[-1] == ("reset", 4, {"unknown_option": 1})  # EchoEnv.reset takes **kwargs
    assert reset.frame_data() == serialize_observation(EchoObservation(reward=0.0))  # WS-OBS-1, WS-OBS-2
    assert env.state == {"episode_id": "ep-9", "step_count": 0, "characters": 0}
    reply = env.step({"message": "hi", "repeat": 2})
    action = inner.received[-1]
    assert isinstance(action, EchoAction) and action.message == "hi" and action.repeat == 2
    assert (reply.observation, reply.reward, reply.done) == ({"echoed": "hihi", "length": 4}, 4.0, False)
    assert reply.frame_data() == serialize_observation(inner.step(EchoAction(message="hi", repeat=2)))
    assert Validator(served.observation_schema or {}).is_valid({**reply.observation, "reward": 4.0, "done": False})
    assert Validator(served.state_schema or {}).is_valid(env.state)
    assert env.step({"message": "0123456789x"}).done is True
    env.close()
    env.close()
    assert inner.close_calls == 1


def test_reset_passes_only_the_arguments_the_environment_takes() -> None:
    env = OpenEnvCoreEnv.wrap(AsyncCountEnv)()
    reply = trio.run(lambda: env.reset(seed=1, episode_id="c-1", not_a_parameter=True))
    assert reply.frame_data() == {"observation": {"total": 0}, "reward": None, "done": False}
    assert env.state["episode_id"] == "c-1"


def test_an_invalid_action_is_refused_like_openenv_core_refuses_it() -> None:
    served = OpenEnvCoreEnv.wrap(EchoEnv)
    env = served()
    env.reset()
    with pytest.raises(ActionRejected) as caught:
        env.step({"message": 3, "extra": True})
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, ProtocolError)
    assert error.code is ErrorCode.VALIDATION_ERROR and error.pointer == "/message"
    assert error.message == "Invalid action at /message: Input should be a valid string"
    assert [(entry["loc"], entry["type"]) for entry in error.errors or []] == [
        (["message"], "string_type"),
        (["extra"], "extra_forbidden"),
    ]
    assert env.env.received[-1][0] == "reset"  # the environment never saw the action
    # the schema the server checks first refuses the same data
    validator = Validator(served.action_schema or {})
    assert not validator.is_valid({"message": 3}) and not validator.is_valid({"message": "x", "extra": True})
    assert validator.is_valid({"message": "x", "metadata": {"k": 1}})
    with pytest.raises(ActionRejected, match="Invalid action at /: expected an object, got list"):
        env.step(["hi"])


def test_async_variants_are_awaited() -> None:
    served = OpenEnvCoreEnv.wrap(AsyncCountEnv)
    assert inspect.iscoroutinefunction(served.reset) and inspect.iscoroutinefunction(served.step)
    assert not inspect.iscoroutinefunction(OpenEnvCoreEnv.wrap(EchoEnv).step)

    async def episode() -> list[LiftedObservation]:
        env = served()
        await env.reset()
        replies = [await env.step({"amount": 4}) for _ in range(3)]
        env.close()
        return replies

    replies = trio.run(episode)
    assert [(r.observation["total"], r.reward, r.done) for r in replies] == [
        (4, 4, False),
        (8, 4, False),
        (12, 4, True),
    ]


def test_concurrency_flags_are_exposed() -> None:
    assert OpenEnvCoreEnv.wrap(EchoEnv).MAX_CONCURRENT_SESSIONS == 1  # SUPPORTS_CONCURRENT_SESSIONS = False
    counting = OpenEnvCoreEnv.wrap(AsyncCountEnv)
    assert counting.MAX_CONCURRENT_SESSIONS is None
    assert counting.REQUIRES_SINGLE_THREAD_EXECUTOR is True


def test_overridden_metadata_is_read_from_an_instance() -> None:
    served = OpenEnvCoreEnv.wrap(AsyncCountEnv)
    expected = {
        "name": "Counter",
        "description": "adds numbers",
        "readme_content": None,
        "version": "2.0",
        "author": "tests",
        "documentation_url": None,
    }
    assert served.metadata == expected
    assert served().metadata == expected


def test_a_factory_is_served_like_its_class() -> None:
    served = OpenEnvCoreEnv.wrap(make_echo_env)
    assert served.action_model is EchoAction and served.__name__ == "EchoEnv"
    env = served()
    assert isinstance(env.env, EchoEnv)
    env.close()


def test_the_base_class_is_not_an_environment() -> None:
    with pytest.raises(TypeError, match="OpenEnvCoreEnv.wrap"):
        OpenEnvCoreEnv()
    with pytest.raises(EnvTargetError, match="not an openenv-core Environment subclass"):
        OpenEnvCoreEnv.wrap(dict)


def test_detection_needs_no_import() -> None:
    assert is_openenv_core_environment(EchoEnv)
    assert not is_openenv_core_environment(EchoEnv())
    assert not is_openenv_core_environment(dict)


class _ShoutingAction(EchoAction):
    """An Action model with its own ``model_validate``: upstream's server calls it."""

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        return super().model_validate({**obj, "message": str(obj.get("message", "")).upper()}, **kwargs)


class _RedactingObservation(EchoObservation):
    """An Observation model with its own ``model_dump``: upstream's server dumps through it."""

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().model_dump(**kwargs), "echoed": "<redacted>"}


class _OverridingEnv(EchoEnv):
    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self.received.append(action)
        return _RedactingObservation(echoed=action.message, length=len(action.message), reward=1.0)


def test_model_overrides_are_honoured_like_upstream_honours_them() -> None:
    """The adapter's fast paths (the model's validator and serializer called directly) give
    way to a model's own ``model_validate`` and ``model_dump``, which upstream calls."""
    served = OpenEnvCoreEnv.wrap(_OverridingEnv, action_model=_ShoutingAction, observation_model=_RedactingObservation)
    env = served()
    env.reset()
    reply = env.step({"message": "hi"})
    action = env.env.received[-1]
    assert isinstance(action, _ShoutingAction) and action.message == "HI"
    assert reply.observation == {"echoed": "<redacted>", "length": 2}
    assert reply.frame_data() == serialize_observation(_RedactingObservation(echoed="HI", length=2, reward=1.0))
    plain = OpenEnvCoreEnv.wrap(EchoEnv)()
    plain.reset()
    assert plain.step({"message": "hi"}).observation == {"echoed": "hi", "length": 2}


class _NumpyRewardEnv(EchoEnv):
    """Builds its observation without validation (``model_construct``), with a numpy scalar
    as the reward: the frame must carry a plain number all the same."""

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        reward = np.int64(len(action.message)) if action.repeat == 1 else np.float32(0.5)
        return EchoObservation.model_construct(echoed=action.message, length=len(action.message), reward=reward)


def test_a_reward_that_is_not_a_plain_number_is_unwrapped() -> None:
    env = OpenEnvCoreEnv.wrap(_NumpyRewardEnv)()
    env.reset()
    whole, half = env.step({"message": "abc"}), env.step({"message": "abc", "repeat": 2})
    assert (type(whole.reward), whole.reward) == (int, 3)
    assert (type(half.reward), half.reward) == (float, 0.5)
