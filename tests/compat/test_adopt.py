"""``adopt``: typed clients shipped in an env package written against upstream (its classes
subclass upstream's EnvClient and MCPToolClient) run on our base unchanged, in upstream's
peer venv, against our server and upstream's; the adopted class does what the shipped one does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.upstream_peers import ROOT, Peer, run_peer_script

PACKAGE = Path(__file__).resolve().parent / "upstream_env_package"


def run_adopt_script(peer: Peer, url: str, kind: str) -> Any:
    return run_peer_script(peer, "compat_adopt.py", url, kind, pythonpath=(ROOT, PACKAGE))  # this tree's package first


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
