"""``openenv_anyio.integrations.trl.environment_factory``: a served environment as TRL's
``environment_factory``, driven through our client on a real server on loopback.

Every generated method must be one ``transformers.utils.get_json_schema`` (what TRL describes
tools with) accepts, describing what the server's schema says; calling it must act on the
instance's own session, with the exact results the environment gives.
"""

from __future__ import annotations

import gc
import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transformers.utils import get_json_schema

from openenv_anyio import NotConnected, RpcInvalidParams, ServerError
from openenv_anyio.integrations.trl import (
    EnvironmentUnavailable,
    UnexpressibleSchema,
    close,
    environment_factory,
)
from openenv_anyio.server import EnvServer, ServerConfig

from .trl_envs import Board, HyphenatedLedger, Ledger, Tagged


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
        # public methods: the tools and reset, nothing else a trainer would offer the model
        public = [name for name in dir(env) if not name.startswith("_") and callable(getattr(env, name))]
        assert sorted(public) == sorted([*Tools.tools, "reset"])
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
    """Each instance's client runs in a thread of its own: ``close`` ends it, and so does
    dropping the instance (a trainer never closes its environments)."""
    Tools = environment_factory(ledger_url, backend=backend)

    def client_threads() -> set[threading.Thread]:  # the server in this process runs "openenv-*" threads
        return {thread for thread in threading.enumerate() if not thread.name.startswith("openenv-")}

    before = client_threads()
    kept, dropped = Tools(), Tools()
    kept.reset()
    dropped.reset()
    assert len(client_threads() - before) == 2
    close(kept)
    del dropped
    gc.collect()
    assert client_threads() - before == set()
    close(kept)  # again: nothing to do
