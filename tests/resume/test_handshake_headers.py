"""``EnvClient(headers=...)``: the extra handshake headers go with every reconnection too,
and never into a log, on both anyio backends."""

from __future__ import annotations

import logging

import anyio
import pytest

from openenv_anyio.client import EnvClient
from openenv_anyio.core import RESUME_TOKEN_HEADER

from .cutting_proxy import CuttingProxy

pytestmark = pytest.mark.anyio

TIMEOUT_S = 20
SECRET = "Bearer s3cr3t-t0ken-value"


async def test_headers_go_with_every_reconnection(proxy: CuttingProxy, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(
            proxy.url, ping_interval_s=None, headers={"Authorization": SECRET, "X-Tenant": "blue"}
        ) as env:
            await env.reset(episode_id="one")
            for n in range(2):
                await anyio.to_thread.run_sync(proxy.cut_all)
                await env.step({"n": n})
            assert env.resumes == 2
    assert len(proxy.handshakes) == 3
    for request in proxy.handshakes:
        lines = request.split(b"\r\n")
        assert f"Authorization: {SECRET}".encode() in lines and b"X-Tenant: blue" in lines
    token = RESUME_TOKEN_HEADER.lower().encode()
    assert token not in proxy.handshakes[0].lower()
    assert all(token in request.lower() for request in proxy.handshakes[1:])
    assert SECRET not in caplog.text and "s3cr3t" not in repr(env)
