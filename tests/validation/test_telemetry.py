"""Validation telemetry on /ws (PROTOCOL.md section 13): ``validation_open`` before the first
reset with the server's validation token, ``validation_read`` with the capability it gave;
the seed report (``VAL-SEED-1``) and the trajectory record (``VAL-TRAJ-1``) equal to what
went over the wire. Every refusal is a VALIDATION_REFUSED error frame that never echoes the
token, and the session goes on."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from openenv_anyio import EnvClient
from openenv_anyio.client import ValidationRefused
from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv
from openenv_anyio.server import RunningServer
from openenv_anyio.server.validation.record import MAX_RECORD_BYTES, SessionRecord
from tests.server.conftest import running
from tests.validation.envs import CountEnv, DiceEnv, DriftEnv, UnseededCountEnv, UnseededEnv
from tests.validation.replay import TIMEOUT, ws_url

TOKEN = "validation-token-" + "7" * 32


def ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    text = ws.recv(timeout=TIMEOUT)
    assert isinstance(text, str)
    answer: dict[str, Any] = json.loads(text)
    return answer


def open_frame(token: str = TOKEN, **data: Any) -> dict[str, Any]:
    return {"type": "validation_open", "data": {"schema_version": 1, "token": token, **data}}


def read_frame(capability: str) -> dict[str, Any]:
    return {"type": "validation_read", "data": {"schema_version": 1, "capability": capability}}


def refused(answer: dict[str, Any]) -> bool:
    """A VALIDATION_REFUSED error frame that does not echo the token."""
    return (
        answer["type"] == "error" and answer["data"]["code"] == "VALIDATION_REFUSED" and TOKEN not in json.dumps(answer)
    )


@pytest.fixture
def server() -> Iterator[RunningServer]:
    with running(DiceEnv, validation_token=TOKEN) as running_server:
        yield running_server


def session(server: RunningServer) -> ClientConnection:
    return connect(ws_url(server), open_timeout=TIMEOUT, close_timeout=TIMEOUT)


SEEDS: dict[str, tuple[Callable[[], Any], bool]] = {
    "ours": (DiceEnv, True),
    "ours, reset without seed": (UnseededEnv, False),
    "gymnasium": (GymnasiumEnv.bind(DriftEnv), True),
    "openenv-core": (OpenEnvCoreEnv.wrap(CountEnv), True),
    "openenv-core, reset without seed": (OpenEnvCoreEnv.wrap(UnseededCountEnv), False),
}
ACTIONS = {DiceEnv: {"guess": 2}, UnseededEnv: {"guess": 2}}


@pytest.mark.parametrize("name", list(SEEDS))
def test_the_record_is_what_went_over_the_wire_and_the_seed_report_tells_the_truth(name: str) -> None:
    factory, accepted = SEEDS[name]
    action = ACTIONS.get(factory) or ({"action": 1} if "gymnasium" in name else {"amount": 2})
    with running(factory, validation_token=TOKEN) as server, session(server) as ws:
        opened = ask(ws, open_frame())
        assert opened["type"] == "validation_open", opened
        capability = opened["data"]["capability"]
        sent = [
            {"type": "reset", "data": {"seed": 42, "episode_id": "ep-1"}},
            {"type": "state"},
            {"type": "step", "data": action},
            {"type": "state"},
            {"type": "step", "data": {"not": "an action"}},  # typed envs refuse it: recorded as answered
        ]
        answers = [ask(ws, frame) for frame in sent]
        telemetry = ask(ws, read_frame(capability))
    assert telemetry["type"] == "validation"
    data = telemetry["data"]
    assert data["schema_version"] == 1
    assert data["seed"] == {"requested": True, "accepted": accepted, "value": 42}
    trajectory = data["trajectory"]
    assert trajectory["schema_version"] == 1 and trajectory["source"] == "openenv-server"
    assert trajectory["complete"] is True
    assert trajectory["records"] == [
        {"operation": frame["type"], "request": frame, "response": answer} for frame, answer in zip(sent, answers)
    ]
    assert TOKEN not in json.dumps(telemetry) and capability not in json.dumps(telemetry)


@pytest.mark.parametrize("factory, accepted", [(DiceEnv, True), (UnseededEnv, False)])
def test_an_environment_in_a_process_of_its_own_reports_its_seed_too(factory: Any, accepted: bool) -> None:
    with running(factory, validation_token=TOKEN, isolate="process") as server, session(server) as ws:
        capability = ask(ws, open_frame())["data"]["capability"]
        ask(ws, {"type": "reset", "data": {"seed": 3}})
        seed = ask(ws, read_frame(capability))["data"]["seed"]
    assert seed == {"requested": True, "accepted": accepted, "value": 3}


def test_a_read_is_a_copy_and_the_record_goes_on_after_it(server: RunningServer) -> None:
    with session(server) as ws:
        capability = ask(ws, open_frame())["data"]["capability"]
        reset = ask(ws, {"type": "reset", "data": {}})
        first = ask(ws, read_frame(capability))["data"]
        first["trajectory"]["records"][0]["response"]["data"]["done"] = "edited"
        ask(ws, {"type": "step", "data": {"guess": 1}})
        second = ask(ws, read_frame(capability))["data"]
    assert second["trajectory"]["records"][0]["response"] == reset
    assert [r["operation"] for r in second["trajectory"]["records"]] == ["reset", "step"]
    assert second["seed"] == {"requested": False, "accepted": False, "value": None}


@pytest.mark.parametrize(
    "config",
    [{}, {"validation_token": TOKEN, "mode": "production"}],
    ids=["no validation token", "production mode"],
)
def test_telemetry_is_refused_when_it_is_off_and_the_session_goes_on(config: dict[str, Any]) -> None:
    with running(DiceEnv, **config) as server, session(server) as ws:
        assert refused(ask(ws, open_frame()))
        assert refused(ask(ws, read_frame("x" * 43)))
        assert ask(ws, {"type": "reset", "data": {"seed": 4}})["type"] == "observation"


def test_every_bad_open_or_read_is_refused_and_changes_nothing(server: RunningServer) -> None:
    with session(server) as first, session(server) as second:
        assert refused(ask(first, read_frame("x" * 43)))  # not open
        assert refused(ask(first, open_frame("wrong-" * 8)))
        assert refused(ask(first, open_frame(TOKEN + "x")))
        assert refused(ask(first, open_frame("w" * 5000)))  # any length: refused, never a schema echo
        for data in ({}, {"schema_version": 2, "token": TOKEN}, {"schema_version": 1}):
            answer = ask(first, {"type": "validation_open", "data": data})
            assert answer["data"]["code"] == "VALIDATION_ERROR" and TOKEN not in json.dumps(answer)
        first_capability = ask(first, open_frame())["data"]["capability"]
        assert refused(ask(first, open_frame()))  # twice
        second_capability = ask(second, open_frame())["data"]["capability"]
        assert first_capability != second_capability
        assert refused(ask(second, read_frame(first_capability)))  # another session's
        assert refused(ask(first, read_frame(second_capability)))
        assert ask(first, read_frame(first_capability))["type"] == "validation"
        assert ask(first, {"type": "reset", "data": {}})["type"] == "observation"
    with session(server) as fresh:  # a capability dies with its session
        ask(fresh, open_frame())
        assert refused(ask(fresh, read_frame(first_capability)))


@pytest.mark.parametrize("first", [{"type": "reset", "data": {"seed": 0}}, {"type": "step", "data": {"guess": 1}}])
def test_telemetry_opens_only_before_the_first_reset_or_step(server: RunningServer, first: dict[str, Any]) -> None:
    with session(server) as ws:
        assert ask(ws, {"type": "state"})["type"] == "state"  # a state request does not close the window
        ask(ws, first)
        answer = ask(ws, open_frame())
        assert refused(answer) and "first reset" in answer["data"]["message"]
        assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"


def test_the_record_stops_at_its_bound_and_says_it_is_incomplete() -> None:
    record = SessionRecord(TOKEN, seeded=True)
    record.open(TOKEN)
    answer = json.dumps({"type": "state", "data": {"episode_id": None, "step_count": 0, "pad": "x" * 1024}})
    request = json.dumps({"type": "state"})
    kept = MAX_RECORD_BYTES // (len(answer) + len(request))
    for _ in range(kept + 2):
        record.record("state", request, answer)
    trajectory = record.telemetry()["trajectory"]
    assert trajectory["complete"] is False
    assert len(trajectory["records"]) == kept


@pytest.mark.anyio
async def test_our_client_opens_and_reads_telemetry(server: RunningServer) -> None:
    async with EnvClient(server.url) as negotiated:  # the resume extension's connection
        with pytest.raises(ValidationRefused, match="openenv-anyio.v1"):
            await negotiated.validation_open(TOKEN)
    async with EnvClient(server.url, reconnect=False) as client:
        with pytest.raises(ValidationRefused):
            await client.validation_open("wrong")
        capability = await client.validation_open(TOKEN)
        result = await client.reset(seed=5, episode_id="ep")
        telemetry = await client.validation_read(capability)
        with pytest.raises(ValidationRefused):
            await client.validation_read(capability + "x")
        assert (await client.step({"guess": 1})).done is False  # the session went on
    assert telemetry["seed"] == {"requested": True, "accepted": True, "value": 5}
    [record] = telemetry["trajectory"]["records"]
    assert record["request"] == {"type": "reset", "data": {"seed": 5, "episode_id": "ep"}}
    assert record["response"]["data"]["observation"] == result.observation
