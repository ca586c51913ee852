"""Session credentials are unguessable and only the whole secret opens a session (SEC-ID-1,
EXT-SES-2): fourteen kinds of forged resume token, and a session id named in the query."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from openenv_anyio.server.env_server import RunningServer

from .envs import StepCounter
from .test_server_rules import TIMEOUT, ask, closed_with, open_ws, receive


def forgeries(token: str, other: str, ended: str) -> dict[str, str]:
    """Ways to guess at the session ``token`` opens, knowing its public id, another live
    session's token and an ended session's token."""
    session_id, _, secret = token.partition(".")
    other_id, _, other_secret = other.partition(".")
    flipped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    return {
        "same length, wrong secret": f"{session_id}.{'A' * len(secret)}",
        "another session's secret": f"{session_id}.{other_secret}",
        "this secret, another session's id": f"{other_id}.{secret}",
        "one character flipped": f"{session_id}.{flipped}",
        "one character short": token[:-1],
        "one character more": token + "A",
        "case swapped": f"{session_id}.{secret.swapcase()}",
        "empty secret": f"{session_id}.",
        "the session id alone": session_id,
        "the secret alone": secret,
        "an extra dotted part": f"{token}.{secret}",
        "base64 padding added": token + "=",
        "an ended session's token": ended,
        "url-encoded": urllib.parse.quote(token, safe="").replace(".", "%2E"),
    }


def test_no_forged_resume_token_opens_a_session(server: RunningServer, counter: type[StepCounter]) -> None:
    with open_ws(server) as owner, open_ws(server) as bystander:
        token = receive(owner)["data"]["resume_token"]
        other = receive(bystander)["data"]["resume_token"]
        with open_ws(server) as short_lived:
            ended = receive(short_lived)["data"]["resume_token"]
            short_lived.send(json.dumps({"type": "close"}))
            closed_with(short_lived)
        ask(owner, {"type": "reset", "request_id": "1"})
        ask(owner, {"type": "step", "data": {}, "request_id": "2"})
        attempts = forgeries(token, other, ended)
        assert len(attempts) == 14
        accepted = []
        for kind, forged in attempts.items():
            with open_ws(server, token=forged) as intruder:
                frame = receive(intruder)
                if (
                    frame["type"] != "error"
                    or frame["data"]["code"] != "SESSION_NOT_FOUND"
                    or closed_with(intruder) != 4404
                ):
                    accepted.append(kind)
        assert accepted == []
        assert ask(owner, {"type": "step", "data": {}, "request_id": "3"})["data"]["observation"]["steps"] == 2
    assert len(counter.instances) == 3  # owner, bystander, short-lived: no forgery created or reached one


@pytest.mark.parametrize("parameter", ["session_id", "session"])
def test_a_session_id_in_the_query_grants_nothing(
    server: RunningServer, counter: type[StepCounter], parameter: str
) -> None:
    """SEC-ID-1: the public id (shown on /ws/ui and in logs) does not attach to the session."""
    with open_ws(server) as owner:
        session_id = receive(owner)["data"]["session_id"]
        ask(owner, {"type": "reset", "request_id": "1"})
        ask(owner, {"type": "step", "data": {}, "request_id": "2"})
        url = "ws" + server.url.removeprefix("http") + f"/ws?{parameter}={session_id}"
        try:
            with connect(url, open_timeout=TIMEOUT, close_timeout=TIMEOUT) as intruder:
                intruder.send(json.dumps({"type": "step", "data": {}}))
                answer = json.loads(intruder.recv(timeout=TIMEOUT))
                assert answer["type"] != "observation" or answer["data"]["observation"]["steps"] == 1  # its own env
        except (InvalidStatus, ConnectionClosed):  # refused at the handshake or closed (4404): as good
            pass
        assert ask(owner, {"type": "step", "data": {}, "request_id": "3"})["data"]["observation"]["steps"] == 2
