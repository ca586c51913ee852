"""``openenv_anyio.integrations.trl.environment_factory``: a served environment as TRL's
``environment_factory``, driven through our client on a real server on loopback.

Every generated method must be one ``transformers.utils.get_json_schema`` (what TRL describes
tools with) accepts, describing what the server's schema says; calling it must act on the
instance's own session, with the exact results the environment gives.
"""

from __future__ import annotations

import gc
import inspect
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from transformers.utils import get_json_schema

from openenv_anyio import NotConnected, RpcInvalidParams, ServerError
from openenv_anyio.integrations.trl import (
    EnvironmentUnavailable,
    RewardNotANumber,
    UnexpressibleSchema,
    close,
    environment_factory,
)
from openenv_anyio.server import EnvServer, ServerConfig
from tests.upstream_peers import peer_named, serve_upstream

from .hostile_listings import HOSTILE, serve_hostile
from .trl_envs import Board, HyphenatedLedger, Ledger, Tagged, Tally, WordyTally

UPSTREAM_APPS = Path(__file__).resolve().parent / "upstream_apps"


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _serve(env: Any) -> Iterator[str]:
    with EnvServer(env, ServerConfig(validate_outbound=True)).run_in_thread() as server:
        yield server.url


@pytest.fixture(scope="module")
def ledger_url() -> Iterator[str]:
    yield from _serve(Ledger)


@pytest.fixture(scope="module")
def board_url() -> Iterator[str]:
    yield from _serve(Board)


def offered_by_trl(env: Any) -> list[str]:
    """The methods TRL 1.16's GRPOTrainer offers the model as tools, found as it finds them:
    the class's functions, less ``reset``, ``get_reward`` and private names (in
    ``GRPOTrainer.__init__``, which needs torch: trl is not installed in the test venv)."""
    members = inspect.getmembers(type(env), predicate=inspect.isfunction)
    return sorted(name for name, _ in members if name not in ("reset", "get_reward") and not name.startswith("_"))


def _described(method: Any) -> dict[str, Any]:
    described: dict[str, Any] = get_json_schema(method)["function"]
    return described


def test_mcp_tools_become_described_methods(ledger_url: str, backend: str) -> None:
    Tools = environment_factory(ledger_url, backend=backend)
    assert Tools.__name__ == "LedgerTools" and Tools.tools == ("deposit", "withdraw", "entries_of")
    env = Tools()
    try:
        described = {name: _described(getattr(env, name)) for name in Tools.tools}
        assert described["deposit"] == {
            "name": "deposit",
            "description": "Put money in the account; returns the balance.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "integer", "description": "how much to put in"},
                    "memo": {"type": "string", "nullable": True, "description": "a note kept with the entry"},
                },
                "required": ["amount"],
            },
            "return": {"type": "string", "description": "What the environment answered, as text."},
        }
        assert described["withdraw"]["parameters"]["required"] == ["amount"]
        kind = described["entries_of"]["parameters"]["properties"]["kind"]
        assert kind["enum"] == ["deposits", "withdrawals"] and kind["description"] == "which entries"
        assert "required" not in described["entries_of"]["parameters"]
        # public methods: the tools, reset and get_reward (TRL 1.16 offers neither of the last
        # two to the model), nothing else a trainer would offer the model
        public = [name for name in dir(env) if not name.startswith("_") and callable(getattr(env, name))]
        assert sorted(public) == sorted([*Tools.tools, "reset", "get_reward"])
        assert offered_by_trl(env) == sorted(Tools.tools)
    finally:
        close(env)


def test_methods_drive_the_instance_s_own_session(ledger_url: str, backend: str) -> None:
    Tools = environment_factory(ledger_url, backend=backend)
    first, second = Tools(), Tools()
    try:
        assert first.reset(seed=10, prompt=[{"role": "user", "content": "go"}]) == '{"balance":10}'
        assert second.reset() == '{"balance":0}'
        assert first.deposit(amount=5) == "15"
        assert first.deposit(amount=7, memo="rent") == "22"
        assert first.withdraw(amount=2) == '{"balance":20,"entries":4}'
        assert first.entries_of() == "[5,7]" and first.entries_of(kind="withdrawals") == "[-2]"
        assert second.entries_of() == "[]"  # a session of its own
        assert first.reset(seed=1) == '{"balance":1}' and first.entries_of() == "[]"  # reset resets it
        with pytest.raises(RpcInvalidParams):
            first.deposit(amount=0)  # the server checks the tool's schema
        with pytest.raises(TypeError):
            first.deposit(5)  # type: ignore[misc]  # keyword arguments only, as a tool call gives them
    finally:
        close(first)
        close(second)
    with pytest.raises(NotConnected):
        first.withdraw(amount=1)


def test_a_non_mcp_env_is_stepped_through_its_action_schema(board_url: str, backend: str) -> None:
    Tools = environment_factory(board_url, backend=backend)
    assert Tools.tools == ("step",)
    assert Tools.__doc__.endswith(
        "Stepped through its action schema: no MCP tools (tools/list answered -32601: This environment has no tools)."
    )
    env = Tools()
    try:
        described = _described(env.step)
        assert described["description"] == "Take one step in the environment with this action. A move on the board."
        properties = described["parameters"]["properties"]
        assert described["parameters"]["required"] == ["direction"]
        assert "metadata" not in properties  # upstream's Action field is not the model's business
        assert properties["direction"]["enum"] == ["up", "down", "left", "right"]
        assert properties["steps"] == {"type": "integer", "description": "how far"}
        assert properties["path"]["type"] == "array" and properties["path"]["items"] == {"type": "object"}
        assert properties["tags"]["additionalProperties"] == {"type": "string"}
        assert env.reward is None and env.done is False
        assert json.loads(env.reset()) == {"x": 0, "y": 0}
        answer = json.loads(env.step(direction="up", steps=2, path=[{"x": 0, "y": 1}], tags={"b": "1", "a": "2"}))
        assert answer == {"x": 0, "y": 2, "waypoints": 1, "tags": ["a", "b"]}
        assert (env.reward, env.done) == (-2.0, False)
        assert json.loads(env.step(direction="left"))["x"] == -1  # the schema's default: one step
        assert json.loads(env.step(direction="left", steps=2)) == {"x": -3, "y": 2, "waypoints": 0, "tags": []}
        assert (env.reward, env.done) == (-5.0, True) and env.observation["x"] == -3
    finally:
        close(env)


def test_tools_and_reset_options(ledger_url: str) -> None:
    Tools = environment_factory(ledger_url, tools=["deposit"], reset_keys=("seed",), reset_text=False, name="Bank")
    assert Tools.__name__ == "Bank" and Tools.tools == ("deposit",) and not hasattr(Tools, "withdraw")
    env = Tools()
    try:
        assert env.reset(seed=3, episode_id="not sent") is None
        assert env.deposit(amount=1) == "4"
    finally:
        close(env)
    with pytest.raises(ValueError, match=r"has no tool 'lend' \(it has deposit, entries_of, withdraw\)"):
        environment_factory(ledger_url, tools=["lend"])


def test_an_unreachable_url_is_one_clear_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EnvironmentUnavailable) as caught:
        environment_factory(f"http://127.0.0.1:{port}", connect_timeout_s=2.0)
    message = str(caught.value)
    assert message.startswith(f"cannot list the tools of http://127.0.0.1:{port}: ") and "\n" not in message


def test_an_action_no_signature_can_say_is_refused() -> None:
    for url in _serve(Tagged):
        with pytest.raises(UnexpressibleSchema, match=r"^tool 'step': its arguments are not an object with properties"):
            environment_factory(url)


def test_a_tool_no_signature_can_say_is_refused_unless_left_out() -> None:
    for url in _serve(HyphenatedLedger):
        with pytest.raises(UnexpressibleSchema) as caught:
            environment_factory(url)
        assert str(caught.value) == "tool 'lookup' parameter 'account-id': the name cannot be a Python keyword argument"
        env = environment_factory(url, tools=["deposit", "withdraw"])()
        try:
            env.reset(seed=2)
            assert env.deposit(amount=1) == "3"
        finally:
            close(env)


def test_an_upstream_app_s_action_model_becomes_the_step_method(backend: str) -> None:
    """openenv-core's pydantic Action (served from the app upstream's create_app built): its
    fields are the parameters, its own validator still refuses on the server."""
    from openenv_anyio.envs.loading import resolve_env_target

    apps = str(Path(__file__).resolve().parents[1] / "interop")
    saved = list(sys.path)
    try:
        factory = resolve_env_target("shout_env.server.app:app", app_dir=apps)
    finally:
        sys.path[:] = saved
    for url in _serve(factory):
        Tools = environment_factory(url, backend=backend)
        assert Tools.__name__ == "ShoutEnvironmentTools"
        env = Tools()
        try:
            described = _described(env.step)
            assert described["parameters"] == {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "what to shout (upper case)"}},
                "required": ["message"],
            }
            env.reset()
            assert json.loads(env.step(message="HEY")) == {"echoed": "HEY", "volume": 3}
            assert (env.reward, env.done) == (3.0, False)
            with pytest.raises(ServerError, match="must be upper case") as refused:
                env.step(message="quiet")
            assert refused.value.code == "VALIDATION_ERROR"
        finally:
            close(env)


def test_an_instance_leaves_no_thread_behind(ledger_url: str, backend: str) -> None:
    """The instances' clients share the process's event-loop thread for blocking clients:
    it ends when every instance is closed or dropped (a trainer never closes its environments)."""
    from openenv_anyio.client.loop_thread import THREAD_NAME

    Tools = environment_factory(ledger_url, backend=backend)

    def loop_threads() -> list[threading.Thread]:
        return [thread for thread in threading.enumerate() if thread.name.startswith(THREAD_NAME)]

    assert loop_threads() == []
    kept, dropped = Tools(), Tools()
    kept.reset()
    dropped.reset()
    assert len(loop_threads()) == 1
    close(kept)
    assert len(loop_threads()) == 1  # the dropped one's client still holds it
    del dropped
    gc.collect()
    assert loop_threads() == []
    close(kept)  # again: nothing to do


# -- TRL 1.16's get_reward: the environment's real reward ------------------------------------


def test_get_reward_is_the_last_step_s_reward(board_url: str, backend: str) -> None:
    env = environment_factory(board_url, backend=backend)()
    try:
        env.reset()
        assert env.get_reward() == 0.0  # no step yet: nothing earned
        env.step(direction="up", steps=2)
        assert env.get_reward() == -2.0
        env.reset()
        assert env.get_reward() == 0.0  # a new episode
    finally:
        close(env)


@pytest.fixture(scope="module")
def tally_url() -> Iterator[str]:
    yield from _serve(Tally)


@pytest.fixture(scope="module")
def upstream_tally_url() -> Iterator[str]:
    peer = peer_named("openenv")
    with serve_upstream(peer, UPSTREAM_APPS, "scored_app:app") as url:
        yield url


@pytest.mark.parametrize("server", ["ours", "upstream"])
def test_a_reward_tool_scores_a_tools_only_env(server: str, backend: str, request: pytest.FixtureRequest) -> None:
    """A tools-only env's steps never carry its reward: its ``reward`` tool does, read by
    ``get_reward`` on the instance's own session and never offered to the model."""
    url = request.getfixturevalue("tally_url" if server == "ours" else "upstream_tally_url")
    Tools = environment_factory(url, backend=backend)
    assert Tools.tools == ("add",)
    first, second = Tools(), Tools()
    try:
        assert offered_by_trl(first) == ["add"]
        first.reset(seed=3)
        second.reset(seed=5)
        assert first.get_reward() == 0.0
        first.add(amount=1)
        first.add(amount=2)
        second.add(amount=3)
        assert (first.get_reward(), second.get_reward()) == (1.0, 0.0)  # each its own session
        assert first.reward is None  # tool calls are not steps
    finally:
        close(first)
        close(second)


def test_a_reward_tool_that_answers_no_number_is_one_typed_error(backend: str) -> None:
    for url in _serve(WordyTally):
        env = environment_factory(url, backend=backend)()
        try:
            env.reset()
            with pytest.raises(RewardNotANumber, match=r"^tool 'reward' answered 'well done', not a number$"):
                env.get_reward()
        finally:
            close(env)


def test_a_reward_tool_named_in_tools_is_refused(tally_url: str) -> None:
    with pytest.raises(UnexpressibleSchema, match="would hide the instance's own 'reward'"):
        environment_factory(tally_url, tools=["add", "reward"])


def test_upstream_s_env_without_mcp_is_stepped(backend: str, upstream_template: Callable[..., Path]) -> None:
    """Upstream's server answers ``tools/list`` with -32603 for an env without MCP: that is
    "no tools here" too, so the class steps through the action schema."""
    peer = peer_named("openenv")
    with serve_upstream(peer, upstream_template(peer)) as url:
        Tools = environment_factory(url, backend=backend)
        assert Tools.tools == ("step",)
        assert Tools.__doc__.endswith(
            "Stepped through its action schema: no MCP tools "
            "(tools/list answered -32603: Environment does not support MCP)."
        )
        env = Tools()
        try:
            env.reset()
            answer = json.loads(env.step(message="hello"))
            assert answer["echoed_message"] == "hello"
            assert env.get_reward() == env.reward == pytest.approx(0.5)
        finally:
            close(env)


# -- hostile tool listings: typed one-line errors, never a merge -------------------------------


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    with serve_hostile() as url:
        yield url


@pytest.mark.parametrize(
    ("case", "error", "start"), [(i, c[2], c[3]) for i, c in enumerate(HOSTILE)], ids=[c[0] for c in HOSTILE]
)
def test_a_hostile_listing_is_a_typed_one_line_error(
    hostile_url: str, case: int, error: str, start: str, backend: str
) -> None:
    url = f"{hostile_url}/{case}"
    with pytest.raises((EnvironmentUnavailable, UnexpressibleSchema)) as caught:
        environment_factory(url, backend=backend)
    message = str(caught.value)
    assert type(caught.value).__name__ == error, message
    assert message.startswith(start) and "\n" not in message, message
    if HOSTILE[case][0] == "two tools, one name":
        assert message == f"{url} lists two tools named 'probe': refusing to merge them into one method"


# -- one URL rule ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/ws", "/ws/"])
def test_the_agent_channel_s_own_url_is_the_server_s(ledger_url: str, suffix: str, backend: str) -> None:
    for url in (ledger_url + suffix, "ws" + ledger_url.removeprefix("http") + suffix):
        Tools = environment_factory(url, backend=backend)
        assert Tools.__name__ == "LedgerTools"  # /metadata read from the same base
        env = Tools()
        try:
            assert env.reset(seed=1) == '{"balance":1}'
        finally:
            close(env)
