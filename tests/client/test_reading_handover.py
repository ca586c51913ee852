"""Who reads the socket: the requesting task while it waits for an answer, the connection's
reader task once the client is idle (both backends, real sockets, a scripted server).

Pings must be answered in both phases (WS-PING-1) and every answer must reach the request
that asked for it (WS-ORDER-3), however often reading passes between the two tasks.
"""

from __future__ import annotations

import anyio
import pytest

from openenv_anyio.client import EnvClient
from openenv_anyio.client.transport import IDLE_TAKEOVER_S
from openenv_anyio.core import Observation, Step, decode_client_frame, encode_frame

from .raw_server import RawPeer, echo_answers, raw_server

pytestmark = pytest.mark.anyio


async def test_pings_during_a_slow_answer_are_answered_by_the_waiting_request() -> None:
    """While a step waits for its answer, the server's pings get pongs (the requester reads)."""
    pongs_before_answer: list[int] = []

    async def slow_and_pinging(peer: RawPeer) -> None:
        await peer.receive_text()
        for n in range(3):
            await peer.ping(f"slow {n}".encode())
            with anyio.fail_after(2):
                await peer.expect_pong()
        pongs_before_answer.append(peer.pongs)
        await peer.send_text(encode_frame(Observation({"echoed": "slow"}, 0.0, False)))
        await echo_answers(peer)

    async with raw_server(slow_and_pinging) as url:
        async with EnvClient(url, ping_interval_s=None) as env:
            with anyio.fail_after(10):
                assert (await env.step({"message": "x"})).observation == {"echoed": "slow"}
                assert (await env.step({"message": "next"})).observation == {"echoed": "next"}
    assert pongs_before_answer == [3]


async def test_answers_stay_in_order_across_idle_and_busy_phases() -> None:
    """Steps separated by pauses longer and shorter than the idle take-over, with a ping
    before each answer, each get their own answer."""

    async def pinging_echo(peer: RawPeer) -> None:
        while True:
            frame = decode_client_frame(await peer.receive_text())
            if not isinstance(frame, Step):
                await peer.close(1000)
                return
            await peer.ping(b"before answer")
            await peer.send_text(encode_frame(Observation({"echoed": frame.action["message"]}, 0.0, False)))

    pauses = [0.0, 3 * IDLE_TAKEOVER_S, 0.0, IDLE_TAKEOVER_S, 5 * IDLE_TAKEOVER_S, 0.0]
    async with raw_server(pinging_echo) as url:
        async with EnvClient(url, ping_interval_s=None) as env:
            with anyio.fail_after(10):
                for n, pause in enumerate(pauses):
                    await anyio.sleep(pause)
                    assert (await env.step({"message": f"m{n}"})).observation == {"echoed": f"m{n}"}
                await anyio.sleep(3 * IDLE_TAKEOVER_S)  # the reader answers the last ping
                assert env._transport is not None and env._transport.pings_answered == len(pauses)


async def test_a_request_after_an_idle_pause_gets_its_answer(server_url: str) -> None:
    """The answer may reach the socket while the idle reader is still reading (the request
    sends before it takes the socket over): the reader's read is kept, never dropped."""
    async with EnvClient(server_url) as env:
        with anyio.fail_after(10):
            await env.reset()
            for n in range(8):
                await anyio.sleep(2 * IDLE_TAKEOVER_S + n * IDLE_TAKEOVER_S / 4)
                assert (await env.step({"message": f"m{n}"})).observation["echoed"] == f"m{n}"


async def test_answers_in_one_read_with_pings_and_fragments_around_them() -> None:
    """Whole text frames (the fast path), pings and fragmented messages sent in one write
    are taken apart in order: each request gets its own answer and every ping a pong (a
    ping after an answer is answered once that answer was taken, then what follows it)."""
    from wsproto.events import Ping, TextMessage

    def answer(message: str) -> str:
        return encode_frame(Observation({"echoed": message}, 0.0, False))

    async def batching(peer: RawPeer) -> None:
        await peer.receive_text()
        first, second = answer("one"), answer("two")
        burst = peer.ws.send(TextMessage(data=first)) + peer.ws.send(Ping(payload=b"mid"))
        burst += peer.ws.send(TextMessage(data=second[:10], message_finished=False))
        burst += peer.ws.send(TextMessage(data=second[10:], message_finished=True))
        await peer.stream.send(burst)  # the answer to this step, then one sent early
        await peer.receive_text()
        await peer.stream.send(peer.ws.send(TextMessage(data=answer("three"))) + peer.ws.send(Ping(payload=b"end")))
        await echo_answers(peer)

    async with raw_server(batching) as url:
        async with EnvClient(url, ping_interval_s=None) as env:
            with anyio.fail_after(10):
                assert (await env.step({"message": "a"})).observation == {"echoed": "one"}
                assert env._transport is not None
                assert await env._transport.receive() == answer("two")  # sent early: read after the pong
                assert env._transport.pings_answered == 1
                assert (await env.step({"message": "b"})).observation == {"echoed": "three"}
                assert (await env.step({"message": "c"})).observation == {"echoed": "c"}
                assert env._transport.pings_answered == 2


async def test_after_a_slow_answer_the_reader_takes_over_and_answers_pings() -> None:
    """A step slower than the idle take-over parks the reader until the step's read ends;
    then the reader takes over, so a ping sent while the client is idle gets its pong."""
    idle_pongs: list[int] = []

    async def slow_then_idle_ping(peer: RawPeer) -> None:
        await peer.receive_text()
        await anyio.sleep(10 * IDLE_TAKEOVER_S)  # the reader looks, sees the step reading, parks
        await peer.send_text(encode_frame(Observation({"echoed": "slow"}, 0.0, False)))
        await anyio.sleep(5 * IDLE_TAKEOVER_S)  # the client is idle: only the reader reads
        await peer.ping(b"idle")
        with anyio.fail_after(2):
            await peer.expect_pong()
        idle_pongs.append(peer.pongs)
        await echo_answers(peer)

    async with raw_server(slow_then_idle_ping) as url:
        async with EnvClient(url, ping_interval_s=None) as env:
            with anyio.fail_after(10):
                assert (await env.step({"message": "x"})).observation == {"echoed": "slow"}
                while not idle_pongs:
                    await anyio.sleep(IDLE_TAKEOVER_S)
                assert env._transport is not None and env._transport.pings_answered == 1
                assert (await env.step({"message": "after"})).observation == {"echoed": "after"}


async def test_slow_requests_in_a_row_then_idle_pings_are_all_answered() -> None:
    """Slow steps back to back (the reader sleeps through each read, no look in between),
    pings inside each, then a ping while the client is idle: every ping gets its pong, the
    idle one from the reader, and each step its own answer."""
    idle_pongs: list[int] = []
    slow_steps = 3

    async def slow_steps_then_idle_ping(peer: RawPeer) -> None:
        for n in range(slow_steps):
            frame = decode_client_frame(await peer.receive_text())
            assert isinstance(frame, Step)
            await anyio.sleep(3 * IDLE_TAKEOVER_S)
            await peer.ping(f"during {n}".encode())
            with anyio.fail_after(2):
                await peer.expect_pong()
            await anyio.sleep(3 * IDLE_TAKEOVER_S)
            await peer.send_text(encode_frame(Observation({"echoed": frame.action["message"]}, 0.0, False)))
        await anyio.sleep(5 * IDLE_TAKEOVER_S)  # the client is idle: only the reader reads
        await peer.ping(b"idle")
        with anyio.fail_after(2):
            await peer.expect_pong()
        idle_pongs.append(peer.pongs)
        await echo_answers(peer)

    async with raw_server(slow_steps_then_idle_ping) as url:
        async with EnvClient(url, ping_interval_s=None) as env:
            with anyio.fail_after(10):
                for n in range(slow_steps):
                    assert (await env.step({"message": f"s{n}"})).observation == {"echoed": f"s{n}"}
                while not idle_pongs:
                    await anyio.sleep(IDLE_TAKEOVER_S)
                assert idle_pongs == [slow_steps + 1]
                assert (await env.step({"message": "after"})).observation == {"echoed": "after"}
