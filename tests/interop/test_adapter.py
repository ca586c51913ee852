"""Our server serving an environment written against each upstream release (its ``openenv
init`` template, unchanged) through our adapter, in the peer's own venv; driven by our client
on both anyio backends."""

from __future__ import annotations

import pytest

from openenv_anyio import EnvClient
from openenv_anyio.client import RequestValidationError


@pytest.mark.anyio
async def test_our_client_drives_the_adapted_template(adapter_url: str) -> None:
    async with EnvClient(adapter_url) as env:
        result = await env.reset(seed=1)
        assert result.observation["echoed_message"] == "Tiny Env environment ready!"
        assert result.reward == 0.0 and result.done is False
        result = await env.step({"message": "hello"})
        assert result.observation["echoed_message"] == "hello" and result.observation["message_length"] == 5
        assert result.reward == pytest.approx(0.5)
        assert (await env.state()).step_count == 1
        with pytest.raises(RequestValidationError):
            await env.step({"nope": 1})
        assert (await env.step({"message": "x"})).observation["message_length"] == 1
