"""Upstream's client sees the same answers from our adapter as from upstream's own server,
for the same (template) environment of each release: the adapter is a drop-in server."""

from __future__ import annotations

import json
from typing import Any

from tests.upstream_peers import Peer, run_peer_script

ACTION = {"message": "hi"}
INVALID = {"nope": 1}


def _comparable(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Random episode ids replaced; an error reduced to its code (the messages differ: ours
    say where the action is wrong, WS-STEP-2)."""
    out = []
    for call in transcript:
        call = dict(call)
        result = call.get("result")
        if isinstance(result, dict) and "episode_id" in result and result["episode_id"] != "ep-7":
            call["result"] = {**result, "episode_id": "<random>"}
        if "error" in call:
            call["error"] = "VALIDATION_ERROR" if "VALIDATION_ERROR" in call["error"] else call["error"]
        out.append(call)
    return out


def test_upstream_client_sees_the_adapter_as_upstream_server(peer: Peer, upstream_url: str, adapter_url: str) -> None:
    def play(url: str) -> list[dict[str, Any]]:
        report = run_peer_script(peer, "upstream_client.py", url, json.dumps(ACTION), json.dumps(INVALID))
        return _comparable(report["transcript"])

    upstream, ours = play(upstream_url), play(adapter_url)
    assert ours == upstream
