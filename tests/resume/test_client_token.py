"""The client's bearer token (SEC-TOKEN-1) on both anyio backends: sent on every connection
and every reconnection, refused without it, and never shown (repr, errors, logs)."""

from __future__ import annotations

import logging

import anyio
import pytest

from openenv_anyio.client import EnvClient, HandshakeRejected

from .cutting_proxy import CuttingProxy
from .envs import StepCounter

pytestmark = pytest.mark.anyio

TOKEN = "s3cr3t-token-never-shown"
TIMEOUT_S = 20


@pytest.mark.server_config(token=TOKEN)
async def test_the_token_opens_the_session_and_every_resume(proxy: CuttingProxy, counter: type[StepCounter]) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, token=TOKEN) as env:
            await env.reset()
            for n in range(1, 3):
                await anyio.to_thread.run_sync(proxy.cut_all)
                assert (await env.step({"n": n})).observation["steps"] == n
            assert env.resumes == 2
    assert len(counter.instances) == 1


@pytest.mark.server_config(token=TOKEN)
async def test_without_the_token_the_handshake_is_refused(proxy: CuttingProxy, counter: type[StepCounter]) -> None:
    with anyio.fail_after(TIMEOUT_S):
        for token in (None, TOKEN + "x"):
            with pytest.raises(HandshakeRejected) as refused:
                async with EnvClient(proxy.url, ping_interval_s=None, token=token):
                    pass
            assert refused.value.status == 401
            assert TOKEN not in str(refused.value)
    assert counter.instances == []


@pytest.mark.server_config(token=TOKEN)
async def test_the_token_is_never_shown(proxy: CuttingProxy, caplog: pytest.LogCaptureFixture) -> None:
    """Not in the client's repr, its sync face's, its errors, or any log record."""
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, token=TOKEN) as env:
            await env.reset()
            shown = [repr(env), repr(env.sync()), str(vars(env).get("address"))]
            with pytest.raises(HandshakeRejected) as refused:
                async with EnvClient(proxy.url, ping_interval_s=None, token=TOKEN[::-1]):
                    pass
    shown += [repr(refused.value), str(refused.value), refused.value.body.decode()]
    shown += [record.getMessage() for record in caplog.records]
    assert not [text for text in shown if TOKEN in text or TOKEN[::-1] in text]


async def test_unusable_tokens_are_refused_without_showing_them() -> None:
    for token in ("", "has space", "new\nline"):
        with pytest.raises(ValueError, match="token must be") as bad:
            EnvClient("http://127.0.0.1:9", token=token)
        assert token not in str(bad.value) or not token


async def test_token_and_an_authorization_header_are_one_or_the_other() -> None:
    with pytest.raises(ValueError, match="not both") as both:
        EnvClient("http://127.0.0.1:9", token=TOKEN, headers={"authorization": "Bearer other"})
    assert TOKEN not in str(both.value)
