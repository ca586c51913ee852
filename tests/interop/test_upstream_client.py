"""Upstream's own client (each peer release's ``GenericEnvClient``, run from its venv)
against our server: serving our env API, and serving an upstream-written env through the adapter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig
from tests.upstream_peers import Peer, run_peer_script


@pytest.fixture(scope="module")
def our_echo_url() -> Iterator[str]:
    config = ServerConfig(host="127.0.0.1", port=0, validate_outbound=True, shutdown_grace_s=2.0)
    with EnvServer(EchoEnv, config).run_in_thread() as running:
        yield running.url


def play(peer: Peer, url: str, action: dict[str, Any], invalid: dict[str, Any]) -> list[dict[str, Any]]:
    report = run_peer_script(peer, "upstream_client.py", url, json.dumps(action), json.dumps(invalid))
    assert report["version"] == peer.version
    return report["transcript"]


def test_upstream_client_drives_our_server(peer: Peer, our_echo_url: str) -> None:
    """WS-RESET-1, WS-STEP-1, WS-STATE-1, WS-ERR-8 through upstream's client."""
    calls = play(peer, our_echo_url, {"message": "hi"}, {"nope": 1})
    assert [call["call"] for call in calls] == [
        "reset",
        "step",
        "step",
        "state",
        "reset",
        "state",
        "step-invalid",
        "step",
    ]
    assert calls[0]["result"] == {"observation": {"echoed": "", "length": 0, "pad": ""}, "reward": 0.0, "done": False}
    assert calls[1]["result"] == {"observation": {"echoed": "hi", "length": 2, "pad": ""}, "reward": 2.0, "done": False}
    assert calls[3]["result"]["step_count"] == 2
    assert calls[5]["result"] == {"episode_id": "ep-7", "step_count": 0}
    assert calls[6]["error"].startswith("RuntimeError") and "VALIDATION_ERROR" in calls[6]["error"]
    assert calls[7]["result"]["reward"] == 2.0
