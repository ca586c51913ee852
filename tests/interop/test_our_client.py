"""Our client (both anyio backends) against each upstream release's own server, serving the
environment its ``openenv init`` generates."""

from __future__ import annotations

import pytest

from openenv_anyio import EnvClient
from openenv_anyio.client import RequestValidationError
from tests.upstream_peers import Peer

pytestmark = pytest.mark.anyio


async def test_our_client_drives_the_upstream_server(peer: Peer, upstream_url: str) -> None:
    async with EnvClient(upstream_url, headers={"Authorization": "Bearer unused-by-upstream"}) as env:
        result = await env.reset(seed=1)
        assert result.observation["echoed_message"] == "Tiny Env environment ready!"
        assert result.reward == 0.0 and result.done is False and result.metadata is None
        result = await env.step({"message": "hello"})
        assert result.observation["echoed_message"] == "hello" and result.reward == pytest.approx(0.5)
        if peer.version_tuple >= (0, 10):  # WS-OBS-2: openenv 0.10 sends the env's metadata beside the observation
            assert result.metadata == {"original_message": "hello", "step": 1}
        else:
            assert result.metadata is None
        state = await env.state()
        assert state.step_count == 1 and isinstance(state.episode_id, str)
        with pytest.raises(RequestValidationError):
            await env.step({"nope": 1})
        assert (await env.step({"message": "x"})).observation["message_length"] == 1
        assert (await env.state()).step_count == 2
