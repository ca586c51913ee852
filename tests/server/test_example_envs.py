"""The built-in example environments, called directly."""

from __future__ import annotations

import pytest

from openenv_anyio.core import ProtocolError
from openenv_anyio.envs.echo import MAX_PAD, EchoEnv
from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server.execution.action_check import action_check_for


def test_guess_terminates_when_out_of_guesses() -> None:
    env = GuessNumberEnv()
    assert env.state["episode_id"] is None, "WS-STATE-1: null before the first reset"
    first = env.reset(seed=1, low=1, high=10, max_guesses=2, episode_id="g")
    assert first["hint"] == "start" and first["done"] is False
    secret = env._secret
    wrong = 1 if secret != 1 else 2
    step = env.step({"guess": wrong})
    assert step["hint"] in ("higher", "lower") and step["reward"] == -0.1 and step["done"] is False
    step = env.step({"guess": wrong})
    assert step["hint"] == "out_of_guesses" and step["done"] is True
    assert env.step({"guess": secret})["done"] is True, "stays over until reset"
    assert env.state == {"episode_id": "g", "step_count": 2, "guesses_left": 0, "solved": False}


def test_guess_is_reproducible_by_seed() -> None:
    one, two = GuessNumberEnv(), GuessNumberEnv()
    one.reset(seed=9)
    two.reset(seed=9)
    assert one._secret == two._secret
    with pytest.raises(ValueError):
        one.reset(low=5, high=1)


def test_declared_action_schemas_are_enforced() -> None:
    with pytest.raises(ProtocolError):
        action_check_for(GuessNumberEnv.action_schema)({"guess": 1.5})
    with pytest.raises(ProtocolError):
        action_check_for(EchoEnv.action_schema)({"message": "x", "pad": -1})
    with pytest.raises(ProtocolError):  # 10^8 characters: hundreds of MiB from one small frame
        action_check_for(EchoEnv.action_schema)({"message": "x", "pad": 100_000_000})
    assert action_check_for(EchoEnv.action_schema)({"message": "x", "pad": MAX_PAD})["pad"] == MAX_PAD
    assert action_check_for(EchoEnv.action_schema)({"message": "x"}) == {"message": "x"}


def test_echo_pads() -> None:
    env = EchoEnv()
    env.reset()
    assert env.step({"message": "ab", "pad": 3}) == {
        "echoed": "ab",
        "length": 2,
        "pad": "xxx",
        "reward": 2.0,
        "done": False,
    }
