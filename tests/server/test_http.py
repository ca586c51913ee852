"""The HTTP endpoints (PROTOCOL.md section 9), rows of the wire reference's HTTP table."""

from __future__ import annotations

import httpx
import pytest
import trio

from openenv_anyio.core import spec_validator
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server.http.env_profile import DEFAULT_SCHEMAS

from .conftest import ask, running, wait_for, ws_connect
from .envs import BoardEnv, PeakCounter, PydanticEnv, Tracked, failing_factory


@pytest.fixture(scope="module")
def http():
    with running(EchoEnv) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def test_health(http) -> None:
    """HTTP-1."""
    assert http.get("/health").json() == {"status": "healthy"}


def test_metadata(http) -> None:
    """HTTP-2: the reference server's shape; ``restore`` says the echo env cannot be brought
    back (it neither snapshots nor declares itself deterministic)."""
    metadata = http.get("/metadata").json()
    assert metadata == {
        "name": "EchoEnv",
        "description": "EchoEnv environment",
        "readme_content": None,
        "version": "1.0.0",
        "author": None,
        "documentation_url": None,
        "restore": "none",
    }
    assert spec_validator("http/metadata-response.json").is_valid(metadata)


class _Snapshotting(EchoEnv):
    def snapshot(self) -> dict[str, int]:
        return {"n": 1}

    def restore(self, snapshot: dict[str, int]) -> None:
        pass


class _Deterministic(EchoEnv):
    DETERMINISTIC = True


@pytest.mark.parametrize(("env", "way"), [(_Snapshotting, "snapshot"), (_Deterministic, "replay")])
def test_metadata_says_how_an_episode_comes_back(env, way) -> None:
    """HTTP-2: ``restore`` is ``snapshot`` for an env with snapshot() and restore(),
    ``replay`` for a deterministic one."""
    with running(env) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        metadata = client.get("/metadata").json()
    assert metadata["restore"] == way
    assert spec_validator("http/metadata-response.json").is_valid(metadata)


def test_schema(http) -> None:
    """HTTP-3: action from the env's declaration; undeclared parts get defaults; the reset
    observation is the observation when the env declares none (openenv 0.10's four keys)."""
    schema = http.get("/schema").json()
    assert list(schema) == ["action", "observation", "reset_observation", "state"]
    assert schema["action"]["required"] == ["message"]
    assert schema["observation"]["title"] == "EchoObservation"
    assert schema["reset_observation"] == schema["observation"]
    assert schema["state"] == DEFAULT_SCHEMAS["state"]
    assert spec_validator("http/schema-response.json").is_valid(schema)


def test_schema_of_a_declared_reset_observation() -> None:
    """HTTP-3, HTTP-9: a declared ``reset_observation_schema`` (here a pydantic model) is
    answered as ``reset_observation`` and is the OpenAPI document's ResetObservation."""
    with running(BoardEnv) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        schema = client.get("/schema").json()
        assert schema["reset_observation"]["title"] == "Welcome"
        assert schema["observation"]["title"] == "BoardView"
        assert spec_validator("http/schema-response.json").is_valid(schema)
        components = client.get("/openapi.json").json()["components"]["schemas"]
        assert components["ResetObservation"]["title"] == "Welcome"
        assert components["Observation"]["title"] == "BoardView"
        answer = client.get("/openapi.json").json()["paths"]["/schema"]["get"]["responses"]["200"]
        assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/SchemaResponse"}
        assert "reset_observation" in components["SchemaResponse"]["properties"]


def test_state_of_a_fresh_env(http) -> None:
    """HTTP-5."""
    assert http.get("/state").json() == {"episode_id": None, "step_count": 0}


def test_reset_and_step(http) -> None:
    """HTTP-4: stateless reset and step answer an observation frame's data."""
    assert http.post("/reset", json={"seed": 3}).json() == {
        "observation": {"echoed": "", "length": 0, "pad": ""},
        "reward": 0.0,
        "done": False,
    }
    assert http.post("/reset").json()["done"] is False
    assert http.post("/step", json={"action": {"message": "yo"}}).json() == {
        "observation": {"echoed": "yo", "length": 2, "pad": ""},
        "reward": 2.0,
        "done": False,
    }


@pytest.mark.parametrize(
    "body",
    [{"action": {"nope": 1}}, {"action": {"message": 3}}, {}, {"action": "hi"}, [1]],
)
def test_invalid_step_is_422_with_detail(http, body) -> None:
    """HTTP-4: 422 ``{"detail": [...]}``."""
    response = http.post("/step", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail and all(entry["loc"][0] == "body" for entry in detail)


def test_invalid_reset_and_json_are_422(http) -> None:
    assert http.post("/reset", json={"seed": -1}).status_code == 422
    assert http.post("/reset", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422


def test_http_envs_are_closed_and_run_off_loop() -> None:
    """HTTP-4: each request builds and closes its own env (none left behind)."""
    live = Tracked.live
    with running(Tracked) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for _ in range(5):
            assert client.post("/step", json={"action": {}}).status_code == 200
        assert client.get("/metadata").json()["name"] == "Tracked"
        assert server.stats()["live_envs"] == 0
    assert Tracked.live == live


def test_factory_failure_and_env_error_are_500() -> None:
    with running(failing_factory) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        response = client.post("/reset")
        assert response.status_code == 500 and "no environment today" in response.json()["detail"]
    with running(Tracked) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        response = client.post("/step", json={"action": {"raise": "bad"}})
        assert response.status_code == 500 and "bad" in response.json()["detail"]


def test_pydantic_action_model() -> None:
    """A pydantic action model: schema from ``model_json_schema()``, ``step`` gets an instance."""
    with running(PydanticEnv) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.get("/schema").json()["action"]["title"] == "Move"
        answer = client.post("/step", json={"action": {"dx": 2}}).json()
        assert answer["observation"] == {"x": 2, "action_type": "Move"}
        assert client.post("/step", json={"action": {"dx": "far"}}).status_code == 422


def test_http_requests_share_the_session_limit() -> None:
    """HTTP-6: /reset and /step hold a session slot while their environment lives: 40
    concurrent requests against a limit of 2 build at most 2 environments (and threads);
    the others are 503 with Retry-After. A WebSocket session holds a slot against them."""
    PeakCounter.peak = PeakCounter.live = 0

    async def burst(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            results: list[httpx.Response] = []

            async def one(path: str, body: dict) -> None:
                results.append(await client.post(path, json=body))

            async with trio.open_nursery() as nursery:
                for number in range(40):
                    if number % 2:
                        nursery.start_soon(one, "/step", {"action": {"sleep": 0.2}})
                    else:
                        nursery.start_soon(one, "/reset", {})
            return results

    with running(PeakCounter, max_concurrent_envs=2) as server:
        responses = trio.run(burst, server.url)
        assert PeakCounter.peak <= 2
        statuses = sorted(response.status_code for response in responses)
        assert set(statuses) <= {200, 503} and 200 in statuses and 503 in statuses, statuses
        refused = next(response for response in responses if response.status_code == 503)
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["max_sessions"] == 2 and "capacity" in refused.json()["detail"]
        wait_for(lambda: server.stats()["active_sessions"] == 0)
        with ws_connect(server) as first, ws_connect(server) as second:
            ask(first, {"type": "reset"})
            ask(second, {"type": "reset"})
            with httpx.Client(base_url=server.url, timeout=10) as client:
                assert client.post("/reset", json={}).status_code == 503
        wait_for(lambda: server.stats()["active_sessions"] == 0)
        with httpx.Client(base_url=server.url, timeout=10) as client:
            assert client.post("/step", json={"action": {}}).status_code == 200


def test_the_root_points_to_what_the_server_offers(http) -> None:
    """``/`` is where a newcomer's browser lands: it names the endpoints instead of a 404."""
    answer = http.get("/")
    assert answer.status_code == 200
    endpoints = answer.json()["endpoints"]
    for path in ("/web", "/health", "/metadata", "/schema", "/ws", "/ws/ui"):
        assert path in endpoints
    assert http.get("/web", follow_redirects=True).status_code == 200
