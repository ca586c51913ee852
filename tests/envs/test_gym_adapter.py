"""Gymnasium environments served unchanged (``openenv_anyio.envs.gymnasium.GymnasiumEnv``).

WS-RESET-1/3 (reset kwargs, episode ids), WS-STEP-1/2 (actions shaped by the schema,
refused outside the space), WS-STATE-1, WS-OBS-1 (reward and done beside the observation),
WS-CLOSE-2 (close once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from adapter_samples import GridWalkEnv

import openenv_anyio
from openenv_anyio.core import ErrorCode, ProtocolError, Validator
from openenv_anyio.envs.errors import ActionOutsideSpace, ActionRejected
from openenv_anyio.envs.gymnasium import GymnasiumEnv, runs_without_blocking


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False))


def test_cartpole_full_episode() -> None:
    env = GymnasiumEnv("CartPole-v1")
    observations = Validator(env.observation_schema or {})
    actions = Validator(env.action_schema or {})
    try:
        first = env.reset(seed=3)
        assert first["reward"] is None and first["done"] is False
        assert first["terminated"] is False and first["truncated"] is False and first["info"] == {}
        assert len(first["observation"]) == 4 and all(type(x) is float for x in first["observation"])
        assert _json_round_trip(first) == first
        state = env.state
        assert state["step_count"] == 0 and isinstance(state["episode_id"], str) and state["env_id"] == "CartPole-v1"
        total, steps, reply = 0.0, 0, first
        while not reply["done"]:
            observation = reply["observation"]
            data = {"action": 1 if observation[2] + observation[3] > 0 else 0}  # lean into the fall
            assert actions.is_valid(data)
            reply = env.step(data)
            rest = {key: value for key, value in reply.items() if key not in ("reward", "done")}
            assert observations.is_valid(rest), observations.faults(rest)
            assert type(reply["reward"]) is float
            assert reply["done"] == (reply["terminated"] or reply["truncated"])
            total += reply["reward"]
            steps += 1
            assert steps <= 500
        assert env.state["step_count"] == steps and total == float(steps)
        assert env.state["episode_id"] == state["episode_id"]
    finally:
        env.close()


def test_seeds_reproduce_and_episode_ids_are_kept() -> None:
    env = GymnasiumEnv("CartPole-v1")
    first = env.reset(seed=11, episode_id="ep-1")
    assert env.state == {"episode_id": "ep-1", "step_count": 0, "env_id": "CartPole-v1"}
    env.step({"action": 0})
    again = env.reset(seed=11)
    assert again["observation"] == first["observation"]
    assert env.state["episode_id"] not in (None, "ep-1") and env.state["step_count"] == 0
    env.close()


def test_other_reset_members_become_gymnasium_options() -> None:
    env = GymnasiumEnv("CartPole-v1")
    reply = env.reset(seed=1, low=-0.001, high=0.001)
    assert all(abs(x) <= 0.001 for x in reply["observation"])
    env.close()


def test_truncation_is_done() -> None:
    env = GymnasiumEnv("CartPole-v1", max_episode_steps=3)
    env.reset(seed=0)
    replies = [env.step({"action": step % 2}) for step in range(3)]
    assert [r["done"] for r in replies] == [False, False, True]
    assert replies[-1]["truncated"] is True and replies[-1]["terminated"] is False
    env.close()


def test_action_outside_the_space_is_refused_before_the_environment_sees_it() -> None:
    env = GymnasiumEnv("CartPole-v1")
    env.reset(seed=0)
    for bad, pointer in [
        (2, "/action"),
        (-1, "/action"),
        (0.5, "/action"),
        ("1", "/action"),
        ([1], "/action"),
    ]:
        with pytest.raises(ActionOutsideSpace) as caught:
            env.step({"action": bad})
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, ProtocolError)
        assert caught.value.code is ErrorCode.VALIDATION_ERROR and caught.value.pointer == pointer
        assert "Discrete(2)" in caught.value.message
        with pytest.raises(ProtocolError) as schema_says:
            Validator(env.action_schema or {}).check({"action": bad}, what="action")
        assert schema_says.value.pointer == pointer and "Discrete(2)" in schema_says.value.message
    assert env.state["step_count"] == 0
    with pytest.raises(ActionRejected, match="'action' is a required property"):
        env.step({"move": 1})
    with pytest.raises(ActionRejected, match="unexpected member 'move'") as extra:
        env.step({"action": 1, "move": 1})
    assert extra.value.pointer == "/move"
    assert env.step({"action": 1, "metadata": {}})["reward"] == 1.0  # openenv-core typed actions carry metadata
    env.close()


def test_a_step_before_any_reset_starts_an_unseeded_episode_first() -> None:
    """A fresh environment can step (HTTP-4: stateless ``POST /step`` steps a fresh one), as
    openenv-core environments, ready after ``__init__``, can."""
    env = GymnasiumEnv("CartPole-v1")
    assert env.state["episode_id"] is None
    reply = env.step({"action": 0})
    assert reply["reward"] == 1.0 and reply["done"] is False and len(reply["observation"]) == 4
    assert isinstance(env.state["episode_id"], str) and env.state["step_count"] == 1
    env.close()


def test_pendulum_takes_a_box_action() -> None:
    env = GymnasiumEnv("Pendulum-v1")
    assert env.action_schema is not None
    assert env.action_schema["properties"]["action"]["items"]["maximum"] == 2.0
    env.reset(seed=5)
    reply = env.step({"action": [1.5]})
    assert type(reply["reward"]) is float and reply["reward"] <= 0.0
    assert len(reply["observation"]) == 3
    with pytest.raises(
        ActionOutsideSpace,
        match=r"2\.5 is not in \[-2\.0, 2\.0\] \(action space Box\(-2\.0, 2\.0, \(1,\), float32\)\)",
    ):
        env.step({"action": [2.5]})
    with pytest.raises(ActionOutsideSpace, match="expected an array of 1 items"):
        env.step({"action": 1.5})
    assert not Validator(env.action_schema).is_valid({"action": [2.5]})
    env.close()


def test_a_custom_multidiscrete_environment() -> None:
    env = GymnasiumEnv(GridWalkEnv, limit=4)
    observation_schema = Validator(env.observation_schema or {})
    reset = env.reset(seed=2, mode="fast")
    assert reset["observation"] == {"position": [0, 0], "visits": [[0.0] * 5] * 3}
    assert reset["info"] == {"options": {"mode": "fast"}, "seed": 2}
    reply = env.step({"action": [1, 3]})
    assert reply["info"] == {"distance": 2.0, "action": [1, 3], "nan": None, "flag": False}
    assert reply["reward"] == -1.0 and reply["observation"]["visits"][1][3] == 1.0
    assert observation_schema.is_valid({k: v for k, v in reply.items() if k not in ("reward", "done")})
    assert _json_round_trip(reply) == reply
    # per-element bounds: [3, 5] -> first element at most 2: both the schema envelope (max 4)
    # lets [3, 0] through, and the adapter refuses it, pointing at the element
    assert Validator(env.action_schema or {}).is_valid({"action": [3, 0]})
    with pytest.raises(ActionOutsideSpace) as caught:
        env.step({"action": [3, 0]})
    assert caught.value.pointer == "/action/0" and "MultiDiscrete([3 5])" in caught.value.message
    assert not Validator(env.action_schema or {}).is_valid({"action": [0, 5]})
    final = env.step({"action": [2, 4]})
    assert final["terminated"] is True and final["done"] is True
    env.close()


def test_bind_makes_a_zero_argument_factory_with_class_attributes() -> None:
    closed_before = GridWalkEnv.closed_count
    factory = GymnasiumEnv.bind("AdapterTest/GridWalk-v0", limit=2)
    assert GridWalkEnv.closed_count == closed_before + 1  # the probe was closed
    assert issubclass(factory, GymnasiumEnv)
    assert factory.action_schema is not None and factory.observation_schema is not None
    assert factory.metadata["name"] == "AdapterTest/GridWalk-v0" and factory.metadata["version"] == "v0"
    assert factory.NON_BLOCKING is False  # not one of Gymnasium's own pure environments
    first, second = factory(), factory()
    assert first.env is not second.env
    first.reset(seed=0)
    first.step({"action": [0, 0]})
    assert first.step({"action": [0, 0]})["truncated"] is True  # limit=2 reached the environment
    first.close()
    first.close()
    second.close()
    assert GridWalkEnv.closed_count == closed_before + 3


def test_classic_control_runs_inline_unless_it_renders() -> None:
    assert GymnasiumEnv.bind("CartPole-v1").NON_BLOCKING is True
    assert GymnasiumEnv.bind("FrozenLake-v1").NON_BLOCKING is True
    assert GymnasiumEnv.bind("CartPole-v1", render_mode="rgb_array").NON_BLOCKING is False
    assert GymnasiumEnv.bind("CartPole-v1", non_blocking=False).NON_BLOCKING is False
    assert GymnasiumEnv.bind(GridWalkEnv, non_blocking=True).NON_BLOCKING is True
    cartpole = gymnasium.make("CartPole-v1")
    assert runs_without_blocking(cartpole) and not runs_without_blocking(GridWalkEnv())
    cartpole.close()


def test_an_existing_instance_is_wrapped_as_it_is() -> None:
    inner = GridWalkEnv()
    env = GymnasiumEnv(inner)
    assert env.env is inner and env.env_id is None and env.metadata["name"] == "GridWalkEnv"
    with pytest.raises(TypeError, match="not for an existing instance"):
        GymnasiumEnv(GridWalkEnv(), limit=3)
    with pytest.raises(TypeError, match="not a gymnasium.Env"):
        GymnasiumEnv(lambda: object())


def test_metadata_describes_the_spaces() -> None:
    env = GymnasiumEnv("CartPole-v1")
    assert env.metadata["name"] == "CartPole-v1" and env.metadata["version"] == "v1"
    assert "Discrete(2)" in env.metadata["description"]
    assert env.state_schema is not None and Validator(env.state_schema).is_valid(env.state)
    env.close()


def test_importing_without_gymnasium_says_what_to_install() -> None:
    script = textwrap.dedent(
        """
        import sys

        class NoGymnasium:
            def find_spec(self, name, path=None, target=None):
                if name == "gymnasium" or name.startswith("gymnasium."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NoGymnasium())
        try:
            import openenv_anyio.envs.gymnasium
        except ImportError as exc:
            print(exc)
        """
    )
    package_root = str(Path(openenv_anyio.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True, env=env
    )
    assert "pip install 'openenv-anyio[gym]'" in result.stdout, result.stdout + result.stderr
    assert "No module named 'gymnasium'" in result.stdout


def test_numpy_observations_of_every_kind_become_json() -> None:
    env = GymnasiumEnv("FrozenLake-v1")
    reply = env.reset(seed=0)
    assert reply["observation"] == 0 and type(reply["observation"]) is int
    assert reply["info"] == {"prob": 1} and type(reply["info"]["prob"]) is int
    env.close()
