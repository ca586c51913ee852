"""``openenv-anyio serve shout_env.server.app:app``: the app upstream's ``create_app`` built,
served by our server in each peer's venv, next to ``uvicorn`` serving the same app.

The env package (``shout_env/``) is written in upstream's style; only the command line
changes. Our server must publish the declared models (not ones guessed from annotations),
refuse what the action model refuses (its own validator included) over HTTP and ``/ws``,
hold ``max_concurrent_envs``, and answer ``/metadata`` as upstream does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.upstream_peers import Peer, peer_named, serve_ours, serve_upstream

from .conftest import TEMPLATE_APP

HERE = Path(__file__).resolve().parent
APP = "shout_env.server.app:app"
#: ``MAX_SESSIONS`` of shout_env/server/app.py
MAX_SESSIONS = 2


@pytest.fixture(scope="module")
def served(peer: Peer) -> Iterator[tuple[str, str]]:
    """(upstream's ``uvicorn APP``, our ``openenv-anyio serve APP``), both from the peer's venv."""
    with serve_upstream(peer, HERE, APP) as upstream, serve_ours(peer, HERE, APP) as ours:
        yield upstream, ours


def _get(url: str, path: str) -> Any:
    answer = httpx.get(url + path, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _ws(url: str) -> ClientConnection:
    return connect(url.replace("http", "ws", 1) + "/ws", open_timeout=30)


def _ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return answer


def test_schema_and_metadata_are_the_declared_ones(peer: Peer, served: tuple[str, str]) -> None:
    upstream, ours = served
    theirs, mine = _get(upstream, "/schema"), _get(ours, "/schema")
    assert ("reset_observation" in theirs) == (peer.version_tuple >= (0, 10))  # 0.10's SchemaResponse
    for part in ("action", "observation", "reset_observation", "state"):
        assert mine[part] == theirs.get(part, theirs["observation"]), part
    assert mine["action"]["title"] == "ShoutAction" and mine["observation"]["title"] == "ShoutObservation"
    assert mine["state"]["title"] == ("ShoutState" if peer.version_tuple >= (0, 10) else "State")
    metadata = _get(ours, "/metadata")
    assert metadata.pop("restore") == "none"  # ours only (HTTP-2): it declares no set_state
    assert metadata == _get(upstream, "/metadata")
    assert metadata["name"] == "ShoutEnvironment"


def test_an_action_the_model_refuses_is_refused(served: tuple[str, str]) -> None:
    upstream, ours = served
    for url in served:  # a constraint the schema states
        refused = httpx.post(url + "/step", json={"action": {"message": ""}}, timeout=30)
        assert refused.status_code == 422, (url, refused.text)
    # the model's own validator: upstream's servers (0.3 and 0.10) answer it with a 500 (the
    # ValueError in the error's context does not serialize to JSON); ours as every refusal
    refused = httpx.post(ours + "/step", json={"action": {"message": "quiet"}}, timeout=30)
    assert refused.status_code == 422 and "must be upper case" in refused.text
    step = {"action": {"message": "HEY"}}
    theirs = httpx.post(upstream + "/step", json=step, timeout=30).json()
    mine = httpx.post(ours + "/step", json=step, timeout=30).json()
    assert mine["observation"]["echoed"] == theirs["observation"]["echoed"] == "HEY"
    assert mine["reward"] == theirs["reward"] == 3.0
    with _ws(ours) as ws:
        _ask(ws, {"type": "reset"})
        refusal = _ask(ws, {"type": "step", "data": {"message": "quiet"}})
        assert refusal["type"] == "error" and refusal["data"]["code"] == "VALIDATION_ERROR"
        assert "must be upper case" in refusal["data"]["message"]
        echoed = _ask(ws, {"type": "step", "data": {"message": "LOUD"}})
        assert echoed["data"]["observation"]["echoed"] == "LOUD" and echoed["data"]["reward"] == 4.0
        assert _ask(ws, {"type": "state"})["data"]["step_count"] == 1


def test_max_concurrent_envs_is_held(served: tuple[str, str]) -> None:
    """The app's ``max_concurrent_envs`` (2; its env allows concurrent sessions, which our
    adapter would otherwise leave unlimited) is the session limit."""
    _, ours = served
    with ExitStack() as stack:
        for _ in range(MAX_SESSIONS):
            ws = stack.enter_context(_ws(ours))
            assert _ask(ws, {"type": "reset"})["type"] == "observation"
        with _ws(ours) as extra:
            refusal = json.loads(extra.recv(timeout=30))
            assert refusal["data"]["code"] == "CAPACITY_REACHED"
            with pytest.raises(ConnectionClosed):
                extra.recv(timeout=30)
    with _ws(ours) as ws:  # a slot is free again
        assert _ask(ws, {"type": "reset"})["type"] == "observation"


def test_the_lowered_limit_is_given_its_reason(peer: Peer) -> None:
    """``--max-concurrent-envs 8`` above the app's ``max_concurrent_envs=2``: the warning and
    the banner give the one reason, the app's ``create_app`` (its environment declares
    ``SUPPORTS_CONCURRENT_SESSIONS = True``: that is not why)."""
    log: list[str] = []
    with serve_ours(peer, HERE, APP, "--max-concurrent-envs", "8", log=log):
        pass
    said = [line for line in log if "lowered to 2" in line]
    assert len(said) == 2, log  # the warning and the banner
    for line in said:
        assert f"max_concurrent_envs={MAX_SESSIONS} in its create_app" in line, line
        assert "SUPPORTS_CONCURRENT_SESSIONS" not in line, line


#: concurrent ``POST /step`` requests in :func:`test_http_steps_are_answered_as_upstream_answers_them`
CONCURRENT_STEPS = 50


def _concurrent_steps(url: str, body: dict[str, Any]) -> list[int]:
    with httpx.Client(timeout=120, limits=httpx.Limits(max_connections=CONCURRENT_STEPS)) as http:

        def step(_: int) -> int:
            return http.post(url + "/step", json=body).status_code

        with ThreadPoolExecutor(CONCURRENT_STEPS) as pool:
            return list(pool.map(step, range(CONCURRENT_STEPS)))


def test_http_steps_are_answered_as_upstream_answers_them(peer: Peer, upstream_template: Callable[..., Path]) -> None:
    """The ``openenv init`` template's app at its own limit (``max_concurrent_envs=1``):
    upstream answers every one of 50 concurrent stateless ``POST /step`` (each on a fresh
    environment that is no session), and so must ours; and both refuse what upstream's
    request model refuses (``timeout_s`` not above 0, a ``request_id`` over 255 characters)
    with 422."""
    template = upstream_template(peer)
    step = {"action": {"message": "hi"}}
    with serve_upstream(peer, template, TEMPLATE_APP) as upstream, serve_ours(peer, template, TEMPLATE_APP) as ours:
        for url in (upstream, ours):
            assert _concurrent_steps(url, step) == [200] * CONCURRENT_STEPS, url
            for refused in ({"timeout_s": -1}, {"timeout_s": 0}, {"timeout_s": "soon"}, {"request_id": "r" * 256}):
                answer = httpx.post(url + "/step", json={**step, **refused}, timeout=30)
                assert answer.status_code == 422, (url, refused, answer.text)
                assert answer.json()["detail"][0]["loc"] == ["body", *refused], (url, answer.text)
            for accepted in ({"timeout_s": 30}, {"request_id": "r" * 255}, {"timeout_s": None}):
                answer = httpx.post(url + "/step", json={**step, **accepted}, timeout=30)
                assert answer.status_code == 200, (url, accepted, answer.text)


def test_a_production_app_is_served_in_production_mode(peer: Peer) -> None:
    with serve_ours(peer, HERE, "shout_env.server.app:production_app") as ours:
        assert httpx.post(ours + "/step", json={"action": {"message": "HI"}}, timeout=30).status_code == 404
        with _ws(ours) as ws:
            _ask(ws, {"type": "reset"})
            assert _ask(ws, {"type": "step", "data": {"message": "HI"}})["data"]["reward"] == 2.0


def test_an_upstream_mcp_app_drives_the_trl_factory() -> None:
    """The app of an upstream ``MCPEnvironment`` (FastMCP tools; openenv 0.10) served with
    ``openenv-anyio serve upstream_tool_app:app``, used through the TRL factory: its FastMCP
    tools become methods ``get_json_schema`` accepts, and they act on the instance's session."""
    from transformers.utils import get_json_schema

    from openenv_anyio.integrations.trl import close, environment_factory

    peer = peer_named("openenv")
    peer.require()
    with serve_ours(peer, HERE.parent / "mcp_surface", "upstream_tool_app:app") as url:
        Tools = environment_factory(url)
        assert Tools.tools == ("remember", "recall", "shout")
        env = Tools()
        try:
            remember = get_json_schema(env.remember)["function"]
            assert remember["description"] == "Store a note; returns how many notes are kept."
            assert remember["parameters"]["properties"]["text"]["type"] == "string"
            assert remember["parameters"]["required"] == ["text"]
            recall = get_json_schema(env.recall)["function"]["parameters"]
            assert recall["properties"]["index"]["type"] == "integer" and "required" not in recall
            env.reset()
            assert env.remember(text="first") == "1" and env.remember(text="second") == "2"
            assert env.recall() == "second" and env.recall(index=0) == "first"
            assert env.shout(text="ab") == "AB"
        finally:
            close(env)
