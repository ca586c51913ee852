"""REPLAY_MISMATCH while resuming (EXT-HAND-3) reaches the caller as the typed
``ReplayMismatch`` (a ``ResumeFailed``), on both anyio backends.

The server's part is played by a scripted peer: the session's first server closes with 1012
(handed over), and the server the resume reaches answers as a restarted server whose replay
of the episode came out otherwise: one ``REPLAY_MISMATCH`` error frame, then 4404.
"""

from __future__ import annotations

import anyio
import pytest
from client.raw_server import RawPeer, raw_server

from openenv_anyio.client import ConnectionDropped, EnvClient, ReplayMismatch, ResumeFailed, ServerError
from openenv_anyio.core import (
    RESUME_TOKEN_HEADER,
    SUBPROTOCOL,
    Error,
    ErrorCode,
    Observation,
    Reset,
    Session,
    Step,
    decode_client_frame,
    encode_frame,
)

pytestmark = pytest.mark.anyio

TOKEN = "s1." + "A" * 43
TIMEOUT_S = 20


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


async def restarted_server_whose_replay_differs(peer: RawPeer) -> None:
    request = await peer.accept(subprotocol=SUBPROTOCOL)
    presented = dict((bytes(k).decode().lower(), bytes(v).decode()) for k, v in request.extra_headers)
    if RESUME_TOKEN_HEADER.lower() in presented:
        mismatch = "the replayed step 1 answered {'roll': 5}, the recorded answer was {'roll': 2}"
        await peer.send_text(encode_frame(Error(ErrorCode.REPLAY_MISMATCH.value, mismatch)))
        await peer.close(4404, "session not found")
        return
    await peer.send_text(encode_frame(Session("s1", TOKEN, False, 60.0)))
    for _ in range(2):  # a reset and a step, then the server restarts
        frame = decode_client_frame(await peer.receive_text())
        assert isinstance(frame, (Reset, Step))
        await peer.send_text(encode_frame(Observation({"roll": 2}, 0.0, False, request_id=frame.request_id)))
    await peer.close(1012, "service restart")


async def test_a_replay_that_came_out_otherwise_is_replay_mismatch() -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with (
            raw_server(restarted_server_whose_replay_differs, handshake=False) as url,
            EnvClient(url, ping_interval_s=None) as env,
        ):
            await env.reset(seed=1)
            await env.step({"roll": True})
            with pytest.raises(ReplayMismatch) as failed:
                await env.step({"roll": True})
            with pytest.raises(ConnectionDropped):
                await env.state()
    assert isinstance(failed.value, ResumeFailed)
    assert isinstance(failed.value.cause, ServerError) and failed.value.cause.code == "REPLAY_MISMATCH"
    assert "roll" in str(failed.value)
