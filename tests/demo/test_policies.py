"""The demo's schema-driven policy builds actions that the action schema accepts."""

from __future__ import annotations

import random

import pytest

from openenv_anyio.core import Validator
from openenv_anyio.demo.policies import CartPoleBalance, SchemaSampler, choose_policy
from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.envs.gymnasium import GymnasiumEnv

SCHEMAS = [
    GuessNumberEnv.action_schema,
    GymnasiumEnv.bind("CartPole-v1").action_schema,
    GymnasiumEnv.bind("Pendulum-v1").action_schema,
    {"type": "object", "properties": {"message": {"type": "string", "maxLength": 3}}, "required": ["message"]},
    {
        "type": "object",
        "properties": {
            "mode": {"enum": ["a", "b"]},
            "flag": {"type": "boolean"},
            "n": {"type": ["integer", "null"], "minimum": 2, "maximum": 4},
        },
        "required": ["mode", "flag", "n"],
        "additionalProperties": False,
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_sampled_actions_satisfy_the_schema(schema: dict) -> None:
    validator = Validator(schema)
    sampler = SchemaSampler(schema, random.Random(3))
    for _ in range(200):
        action = sampler.act({})
        assert validator.is_valid(action), (action, validator.faults(action))


def test_cartpole_gets_the_heuristic_and_others_the_sampler() -> None:
    assert isinstance(choose_policy("CartPoleEnv gymnasium:CartPole-v1", None, 0), CartPoleBalance)
    assert isinstance(choose_policy("GuessNumberEnv", GuessNumberEnv.action_schema, 0), SchemaSampler)
    policy = CartPoleBalance(random.Random(0), explore=0.0)
    assert policy.act({"observation": [0.0, 0.0, 0.1, 0.0]}) == {"action": 1}
    assert policy.act({"observation": [0.0, 0.0, -0.1, 0.0]}) == {"action": 0}
