"""COMPAT-1 and WS-OBS-2 on our client, both anyio backends: members a newer server adds in
the frames it may extend are ignored; ``metadata`` beside the observation is exposed."""

from __future__ import annotations

import json

import anyio
import pytest

from openenv_anyio.client import EnvClient, ProtocolViolation

from .raw_server import RawPeer, raw_server

pytestmark = pytest.mark.anyio


def answering(*answers: dict[str, object]) -> object:
    async def handler(peer: RawPeer) -> None:
        for answer in answers:
            await peer.receive_text()
            await peer.send_text(json.dumps(answer))
        await peer.receive_text()

    return handler


async def test_unknown_members_are_ignored_and_metadata_is_exposed() -> None:
    step = {
        "type": "observation",
        "data": {"observation": {"x": 1}, "reward": 0.5, "done": False, "metadata": {"k": 1}, "later": [1]},
        "trace": "abc",
    }
    state = {"type": "state", "data": {"episode_id": "e", "step_count": 1}, "later": True}
    async with raw_server(answering(step, state)) as url:  # type: ignore[arg-type]
        with anyio.fail_after(10):
            async with EnvClient(url, reconnect=False) as env:
                result = await env.step({"a": 1})
                assert (result.observation, result.reward, result.metadata) == ({"x": 1}, 0.5, {"k": 1})
                assert (await env.state()).episode_id == "e"


async def test_a_broken_known_member_is_still_a_violation() -> None:
    """Open objects are not unchecked ones: the members the spec names keep their types."""
    step = {"type": "observation", "data": {"observation": {}, "reward": 0.5, "done": "no", "later": 1}}
    async with raw_server(answering(step)) as url:  # type: ignore[arg-type]
        with anyio.fail_after(10), pytest.raises(ProtocolViolation, match="done"):
            async with EnvClient(url, reconnect=False) as env:
                await env.step({"a": 1})
