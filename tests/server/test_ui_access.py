"""Who sees what on ``/ws/ui`` (SEC-UI-1): the operator every session in full, an agent the
session list, with payloads only for the sessions whose resume tokens it presents."""

from __future__ import annotations

import json
from typing import Any

from websockets.sync.client import ClientConnection, connect

from openenv_anyio.core import RESUME_TOKEN_HEADER, SUBPROTOCOL, decode_ui_frame
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import RunningServer

from .conftest import TIMEOUT, ask, running

OPERATOR = "operator-token-ui"
AGENT = "agent-token-ui"


def open_ws(server: RunningServer, path: str, token: str, **headers: str) -> ClientConnection:
    url = "ws" + server.url.removeprefix("http") + path
    return connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}", **headers},
        subprotocols=[SUBPROTOCOL] if path == "/ws" else None,  # type: ignore[list-item]
        open_timeout=TIMEOUT,
        close_timeout=TIMEOUT,
    )


def states_until(ui: ClientConnection, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The latest update of each wanted episode, once every one has stepped."""
    seen: dict[str, dict[str, Any]] = {}
    while not all(seen.get(episode, {}).get("step_count") == 1 for episode in wanted):
        text = ui.recv(timeout=TIMEOUT)
        decode_ui_frame(text)  # redacted updates match the spec too
        state = json.loads(text)["episode_state"]
        if state["episode_id"] in wanted:
            seen[state["episode_id"]] = state
    return seen


def test_operator_reads_every_session_and_agents_only_their_own() -> None:
    with running(EchoEnv, token=OPERATOR, agent_tokens=(AGENT,)) as server:
        with open_ws(server, "/ws", AGENT) as mine, open_ws(server, "/ws", AGENT) as theirs:
            my_token = json.loads(mine.recv(timeout=TIMEOUT))["data"]["resume_token"]
            json.loads(theirs.recv(timeout=TIMEOUT))
            for ws, episode in ((mine, "mine"), (theirs, "theirs")):
                ask(ws, {"type": "reset", "data": {"episode_id": episode}, "request_id": "1"})
                ask(ws, {"type": "step", "data": {"message": f"private {episode}"}, "request_id": "2"})
            with (
                open_ws(server, "/ws/ui", OPERATOR) as operator,
                open_ws(server, "/ws/ui", AGENT) as stranger,
                open_ws(server, "/ws/ui", AGENT, **{RESUME_TOKEN_HEADER: f"garbage, {my_token}"}) as owner,
            ):
                everything = states_until(operator, {"mine", "theirs"})
                listed = states_until(stranger, {"mine", "theirs"})
                own = states_until(owner, {"mine", "theirs"})
    for episode in ("mine", "theirs"):
        assert everything[episode]["current_observation"]["echoed"] == f"private {episode}"
        assert "redacted" not in everything[episode]
        assert listed[episode]["current_observation"] is None and listed[episode]["action_logs"] == []
        assert listed[episode]["redacted"] is True and listed[episode]["step_count"] == 1
    assert own["mine"]["current_observation"]["echoed"] == "private mine"
    assert own["theirs"]["redacted"] is True and own["theirs"]["current_observation"] is None


def test_without_tokens_every_subscriber_reads_everything() -> None:
    """The loopback default: the Origin rule is the only gate."""
    with running(EchoEnv) as server:
        url = "ws" + server.url.removeprefix("http")
        with connect(url + "/ws", open_timeout=TIMEOUT) as ws, connect(url + "/ws/ui", open_timeout=TIMEOUT) as ui:
            ask(ws, {"type": "reset", "data": {"episode_id": "open"}})
            ask(ws, {"type": "step", "data": {"message": "visible"}})
            state = states_until(ui, {"open"})["open"]
    assert state["current_observation"]["echoed"] == "visible" and "redacted" not in state


def test_an_agent_dashboard_sees_progress_without_rewards() -> None:
    """SEC-UI-1 on ``/ws/ui?dashboard=1`` (UI-7): status and counts, no observation, action
    or reward of a session it may not read."""
    with running(EchoEnv, token=OPERATOR, agent_tokens=(AGENT,)) as server:
        with open_ws(server, "/ws", AGENT) as ws:
            json.loads(ws.recv(timeout=TIMEOUT))
            ask(ws, {"type": "reset", "data": {"episode_id": "theirs"}, "request_id": "1"})
            ask(ws, {"type": "step", "data": {"message": "secret"}, "request_id": "2"})
            with (
                open_ws(server, "/ws/ui?dashboard=1", AGENT) as stranger,
                open_ws(server, "/ws/ui?dashboard=1", OPERATOR) as operator,
            ):
                listed = states_until(stranger, {"theirs"})["theirs"]
                full = states_until(operator, {"theirs"})["theirs"]
    assert listed["redacted"] is True and listed["episode_count"] == 1 and listed["status"] in ("idle", "stepping")
    assert listed["current_observation"] is None and not {"reward", "rewards", "returns", "episode_return"} & set(
        listed
    )
    assert full["current_observation"]["echoed"] == "secret" and full["rewards"] == [6.0]
