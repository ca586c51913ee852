"""``adopt``: typed clients shipped in an env package written against upstream (its classes
subclass upstream's EnvClient and MCPToolClient) run on our base unchanged, in upstream's
peer venv, against our server and upstream's; the adopted class does what the shipped one does."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.upstream_peers import PEER_SIDE, ROOT, SCRIPT_TIMEOUT_S, Peer

PACKAGE = Path(__file__).resolve().parent / "upstream_env_package"


def run_adopt_script(peer: Peer, url: str, kind: str) -> Any:
    environ = {key: value for key, value in os.environ.items() if "proxy" not in key.lower()}
    environ.pop("VIRTUAL_ENV", None)
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(PACKAGE)])  # this worktree's package first
    environ.update({"NO_PROXY": "127.0.0.1,localhost", "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"})
    completed = subprocess.run(
        [str(peer.python), str(PEER_SIDE / "compat_adopt.py"), url, kind],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env=environ,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_adopted_typed_client_matches_the_shipped_one(peer: Peer, tiny_url: str) -> None:
    seen = run_adopt_script(peer, tiny_url, "tiny")
    assert all(seen["checks"].values()), seen["checks"]
    assert seen["checks"]["validation_error_before_sending"]
    assert seen["adopted"] == seen["upstream"]
    # upstream's own StepResult came back through our client; super() chains and package methods work
    assert seen["adopted"][0] == [True, "hi", pytest.approx(0.2), "ABC", 2, 3]
    assert seen["adopted"][1] == [5, "adopted", 1]
    assert seen["threads_left"] == []


def test_adopted_tool_client_matches_the_shipped_one(peer: Peer, tools_url: str) -> None:
    seen = run_adopt_script(peer, tools_url, "notes")
    assert all(seen["checks"].values()), seen["checks"]
    assert seen["adopted"] == seen["upstream"]
    assert seen["adopted"][0] == [1, [2, 3], "c"]
    assert seen["adopted"][1][0] == ["recall", "remember", "shout"]
    assert seen["adopted"][1][1:] == [[1, 2], "HI", True, True]
    assert seen["threads_left"] == []
