"""The HTTP endpoints (PROTOCOL.md section 9), rows of the wire reference's HTTP table."""

from __future__ import annotations

import httpx
import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server.env_profile import DEFAULT_SCHEMAS

from .conftest import running
from .envs import PydanticEnv, Tracked, failing_factory


@pytest.fixture(scope="module")
def http():
    with running(EchoEnv) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def test_health(http) -> None:
    """HTTP-1."""
    assert http.get("/health").json() == {"status": "healthy"}


def test_metadata(http) -> None:
    """HTTP-2: the reference server's shape."""
    assert http.get("/metadata").json() == {
        "name": "EchoEnv",
        "description": "EchoEnv environment",
        "readme_content": None,
        "version": "1.0.0",
        "author": None,
        "documentation_url": None,
    }


def test_schema(http) -> None:
    """HTTP-3: action from the env's declaration; undeclared parts get defaults."""
    schema = http.get("/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    assert schema["action"]["required"] == ["message"]
    assert schema["observation"]["title"] == "EchoObservation"
    assert schema["state"] == DEFAULT_SCHEMAS["state"]


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
