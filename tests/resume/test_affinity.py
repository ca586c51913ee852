"""EXT-AFF-1: one random ``OpenEnv-Affinity`` key per session, the same on its resumes."""

from __future__ import annotations

import re

import anyio
import pytest

from openenv_anyio.client import EnvClient

from .cutting_proxy import CuttingProxy

pytestmark = pytest.mark.anyio

TIMEOUT_S = 20


def header(head: bytes, name: str) -> str | None:
    match = re.search(rb"\r\n" + name.lower().encode() + rb":\s*([^\r]*)\r\n", head, re.I)
    return None if match is None else match.group(1).decode()


async def test_every_connection_of_a_session_carries_its_key(proxy: CuttingProxy) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with (
            EnvClient(proxy.url, ping_interval_s=None) as env,
            EnvClient(proxy.url, ping_interval_s=None) as other,
        ):
            await env.reset()
            await other.reset()
            await anyio.to_thread.run_sync(proxy.cut_all)
            await env.step({"n": 1})
            assert env.resumes == 1
    first, second, resumed = proxy.handshakes[:3]
    assert header(resumed, "OpenEnv-Resume-Token") is not None
    assert header(first, "OpenEnv-Affinity") == header(resumed, "OpenEnv-Affinity") == env.affinity_key
    assert header(second, "OpenEnv-Affinity") == other.affinity_key != env.affinity_key
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", env.affinity_key)


async def test_a_chosen_key_is_sent_as_given(proxy: CuttingProxy) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, affinity_key="user-42-session-7") as env:
            await env.reset()
    assert header(proxy.handshakes[0], "OpenEnv-Affinity") == "user-42-session-7"


@pytest.mark.parametrize("key", ["short", "x" * 129, "has space", "bad\r\nX-Injected: 1"])
def test_a_bad_key_is_refused_at_once(key: str) -> None:
    with pytest.raises(ValueError, match="an affinity key is 8 to 128 characters"):
        EnvClient("http://127.0.0.1:1", affinity_key=key)


def test_the_key_is_not_a_free_header() -> None:
    """One way to set it: ``affinity_key`` (``headers`` may not carry a second key)."""
    with pytest.raises(ValueError, match="is set by the client itself"):
        EnvClient("http://127.0.0.1:1", headers={"openenv-affinity": "user-42-session-7"})
