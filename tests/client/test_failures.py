"""Failure modes proven with real sockets against small scripted servers (both backends)."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from wsproto import WSConnection
from wsproto.events import BytesMessage, Ping, TextMessage

from openenv_anyio.client import (
    ConnectionClosedByServer,
    ConnectionDropped,
    ConnectionLost,
    ConnectionRefused,
    ConnectTimeout,
    EnvClient,
    EnvClientError,
    HandshakeRejected,
    MessageTimeout,
    MessageTooLarge,
    NotConnected,
    ProtocolViolation,
)
from openenv_anyio.core import Observation, encode_frame

from .leftovers import client_tasks, wait_until_no_client_tasks
from .raw_server import PeerClosed, RawPeer, echo_answers, first_answer_late, raw_server

pytestmark = pytest.mark.anyio

LIMIT = 0.5  # seconds: the timeouts under test
SLACK = 1.5  # seconds: generous, the machine is noisy


async def test_connect_timeout_when_the_handshake_is_never_answered() -> None:
    """TCP is accepted, the handshake never answered -> ConnectTimeout close to the limit."""

    async def silent(peer: RawPeer) -> None:
        await anyio.sleep_forever()

    async with raw_server(silent, handshake=False) as url:
        start = anyio.current_time()
        with anyio.fail_after(LIMIT + SLACK), pytest.raises(ConnectTimeout) as caught:
            async with EnvClient(url, connect_timeout_s=LIMIT):
                pytest.fail("connected to a server that never answered the handshake")
        elapsed = anyio.current_time() - start
    assert LIMIT * 0.9 <= elapsed < LIMIT + SLACK
    assert isinstance(caught.value, TimeoutError)
    assert "127.0.0.1" in str(caught.value) and "connect_timeout_s=0.5" in str(caught.value)
    assert caught.value.limit_s == LIMIT
    assert client_tasks() == []


async def test_connection_refused() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # nothing listens on that port any more
    with anyio.fail_after(5), pytest.raises(ConnectionRefused) as caught:
        async with EnvClient(f"http://127.0.0.1:{port}"):
            pass
    assert isinstance(caught.value, ConnectionError) and isinstance(caught.value, EnvClientError)
    assert str(port) in str(caught.value)


async def test_handshake_rejected_names_the_http_status() -> None:
    async def reject(peer: RawPeer) -> None:
        await peer.stream.receive(65536)
        await peer.stream.send(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\nConnection: close\r\n\r\nnope!\n")

    async with raw_server(reject, handshake=False) as url:
        with anyio.fail_after(5), pytest.raises(HandshakeRejected) as caught:
            async with EnvClient(url):
                pass
    assert caught.value.status == 403
    assert "403" in str(caught.value) and "nope!" in str(caught.value)


async def test_message_timeout_when_a_step_is_never_answered() -> None:
    """The server reads the step and stays silent -> MessageTimeout close to the limit; the
    connection is dropped, nothing keeps running, later calls say why."""
    seen: list[str | bytes] = []

    async def silent_after_reading(peer: RawPeer) -> None:
        seen.append(await peer.receive_text())
        await anyio.sleep_forever()

    async with raw_server(silent_after_reading) as url:
        async with EnvClient(url, message_timeout_s=LIMIT) as env:
            start = anyio.current_time()
            with anyio.fail_after(LIMIT + SLACK), pytest.raises(MessageTimeout) as caught:
                await env.step({"message": "hi"})
            elapsed = anyio.current_time() - start
            await wait_until_no_client_tasks()  # reader and keep-alive ended with the connection
            with pytest.raises(ConnectionDropped) as later:
                await env.state()
            assert later.value.cause is caught.value
    assert LIMIT * 0.9 <= elapsed < LIMIT + SLACK
    assert isinstance(caught.value, TimeoutError)
    assert caught.value.limit_s == LIMIT and caught.value.request == "step"
    assert "message_timeout_s=0.5" in str(caught.value) and "127.0.0.1" in str(caught.value)
    assert seen == ['{"type":"step","data":{"message":"hi"}}']
    assert client_tasks() == []


async def test_oversized_frame_raises_message_too_large_and_closes_with_1009() -> None:
    """WS-ERR-6 on the client side: a frame over max_message_size_mb is refused with 1009."""
    close_codes: list[int | None] = []
    size = 2 * 1024 * 1024

    async def oversized(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.send_text(encode_frame(Observation({"pad": "x" * size}, 0.0, False)))
        try:
            await peer.pump()
        except PeerClosed as closed:
            close_codes.append(closed.code)

    async with raw_server(oversized) as url:
        async with EnvClient(url, max_message_size_mb=1.0) as env:
            with anyio.fail_after(10), pytest.raises(MessageTooLarge) as caught:
                await env.step({"message": "big"})
            with pytest.raises(ConnectionDropped):
                await env.step({"message": "again"})
        with anyio.fail_after(5):
            while not close_codes:
                await anyio.sleep(0.01)
    assert close_codes == [1009]
    assert caught.value.limit == 1024 * 1024
    assert caught.value.size > size  # the frame's declared length
    assert str(caught.value.limit) in str(caught.value) and str(caught.value.size) in str(caught.value)


@pytest.mark.parametrize("announced", [2 * 1024 * 1024, 1 << 40])
async def test_a_frame_header_announcing_too_much_is_refused_at_the_header(announced: int) -> None:
    """WS-ERR-6 on the client side against a lying server: the header of a text frame
    announces more than max_message_size_mb and a few bytes follow, then nothing. The client
    raises MessageTooLarge and closes with 1009 at once; it does not wait for bytes that never
    come (no message timeout here: waiting would hang)."""
    close_codes: list[int | None] = []
    header = bytes([0x81, 127]) + announced.to_bytes(8, "big")

    async def lying(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.stream.send(header + b'{"type":"observation","data":')
        try:
            await peer.pump()
        except PeerClosed as closed:
            close_codes.append(closed.code)

    async with raw_server(lying) as url:
        async with EnvClient(url, max_message_size_mb=1.0, message_timeout_s=None) as env:
            with anyio.fail_after(20), pytest.raises(MessageTooLarge) as caught:
                await env.step({"message": "big"})
        with anyio.fail_after(5):
            while not close_codes:
                await anyio.sleep(0.01)
    assert close_codes == [1009]
    assert caught.value.size >= announced and caught.value.limit == 1024 * 1024


async def test_a_300_mib_limit_lets_a_150_mb_observation_through() -> None:
    size = 150_000_000

    async def huge(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.send_text(
            '{"type":"observation","data":{"observation":{"pad":"' + "x" * size + '"},"reward":1.0,"done":true}}'
        )
        await peer.pump()

    async with raw_server(huge) as url:
        async with EnvClient(url, max_message_size_mb=300.0, message_timeout_s=60.0) as env:
            with anyio.fail_after(60):
                result = await env.step({"message": "big"})
    assert len(result.observation["pad"]) == size
    assert result.reward == 1.0 and result.done is True


async def test_server_close_is_reported_with_code_and_reason() -> None:
    async def closer(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.close(4408, "idle for 1 s")
        await peer.pump()

    async with raw_server(closer) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(5), pytest.raises(ConnectionClosedByServer) as caught:
                await env.step({"message": "hi"})
            with pytest.raises(ConnectionDropped):
                await env.step({"message": "hi"})
    assert caught.value.code == 4408 and caught.value.reason == "idle for 1 s"
    assert "4408" in str(caught.value)


async def test_an_invalid_server_frame_is_a_protocol_violation() -> None:
    """Frames received are validated against spec/ (server-frame.json)."""

    async def bad(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.send_text('{"type":"observation","data":{"observation":{},"reward":"lots","done":false}}')
        await peer.pump()

    async with raw_server(bad) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(5), pytest.raises(ProtocolViolation) as caught:
                await env.step({"message": "hi"})
    assert caught.value.pointer == "/data/reward"


async def test_cancelling_a_step_from_outside_leaves_nothing_behind() -> None:
    """An enclosing cancel scope cancels a pending step: no task is left, the next call
    raises a clear error, and the late answer is never handed out (WS-ORDER-3)."""

    async with raw_server(first_answer_late(0.5)) as url:
        async with EnvClient(url) as env:
            with anyio.move_on_after(0.1) as scope:
                await env.step({"message": "first"})
            assert scope.cancelled_caught
            await wait_until_no_client_tasks()
            await anyio.sleep(0.6)  # the late answer would have arrived by now
            with anyio.fail_after(5), pytest.raises(ConnectionDropped) as caught:
                await env.step({"message": "second"})
            assert "cancelled" in str(caught.value)
    assert client_tasks() == []


async def test_a_late_answer_never_reaches_a_later_request() -> None:
    """After MessageTimeout the delayed answer of step 1 must not become step 2's answer."""

    async with raw_server(first_answer_late(0.4)) as url:
        async with EnvClient(url, message_timeout_s=0.2) as env:
            with anyio.fail_after(5), pytest.raises(MessageTimeout):
                await env.step({"message": "first"})
            await anyio.sleep(0.4)
            with anyio.fail_after(5), pytest.raises(ConnectionDropped):
                await env.step({"message": "second"})


async def test_idle_client_answers_server_pings() -> None:
    """WS-PING-1: idle for 3x the server's ping timeout, the client still answers pings and
    a step works afterwards."""
    ping_timeout = 0.3

    async def pinging(peer: RawPeer) -> None:
        deadline = anyio.current_time() + 3 * ping_timeout
        while anyio.current_time() < deadline:
            await peer.ping(b"are you there")
            with anyio.fail_after(ping_timeout):  # no pong in time: the server gives up
                await peer.expect_pong()
            await anyio.sleep(ping_timeout / 4)
        await echo_answers(peer)

    async with raw_server(pinging) as url:
        async with EnvClient(url) as env:
            await anyio.sleep(4 * ping_timeout)
            with anyio.fail_after(5):
                result = await env.step({"message": "still here"})
    assert result.observation == {"echoed": "still here"}


async def test_client_keepalive_detects_a_dead_peer() -> None:
    """ping_interval_s / ping_timeout_s: a peer that never answers pings is given up."""

    async def deaf(peer: RawPeer) -> None:
        await anyio.sleep_forever()

    async with raw_server(deaf) as url:
        async with EnvClient(url, ping_interval_s=0.1, ping_timeout_s=0.2) as env:
            await wait_until_no_client_tasks()  # the keep-alive gave up and closed
            with anyio.fail_after(5), pytest.raises((ConnectionLost, ConnectionDropped)) as caught:
                await env.step({"message": "hi"})
    assert "ping_timeout_s=0.2" in str(caught.value)


async def test_client_keepalive_keeps_a_live_connection() -> None:
    pinged: list[int] = []

    async def lively(peer: RawPeer) -> None:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(peer.pump)
            await anyio.sleep(1.0)
            task_group.cancel_scope.cancel()
        pinged.append(peer.pings_received)
        await echo_answers(peer)

    async with raw_server(lively) as url:  # generous pong timeout: the machine may be loaded
        async with EnvClient(url, ping_interval_s=0.1, ping_timeout_s=3.0) as env:
            await anyio.sleep(1.1)
            with anyio.fail_after(5):
                assert (await env.step({"message": "ok"})).observation == {"echoed": "ok"}
    assert pinged and pinged[0] >= 3


async def test_leaving_while_the_keepalive_waits_for_a_pong_ends_every_client_task() -> None:
    """The client's tasks end by themselves once its connection is closed (it does not
    cancel them then): a keep-alive still waiting for the pong of its ping (no pong timeout)
    ends too, and leaving the ``async with`` returns."""
    pinged = anyio.Event()

    async def no_pongs(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.send_text(encode_frame(Observation({"echoed": "first"}, 0.0, False)))
        while True:  # read without answering pings; the client's close is answered
            for event in await peer._read_events():
                if isinstance(event, TextMessage) and '"close"' in event.data:
                    await peer.close(1000)
                    return
                if isinstance(event, Ping):
                    pinged.set()

    async with raw_server(no_pongs) as url:
        with anyio.fail_after(10):
            async with EnvClient(url, ping_interval_s=0.05, ping_timeout_s=None) as env:
                assert (await env.step({"message": "x"})).observation == {"echoed": "first"}
                await pinged.wait()
                await anyio.sleep(0.05)  # the keep-alive now waits for its pong
            assert client_tasks() == []


async def test_a_task_cancelled_while_waiting_its_turn_does_not_break_the_client() -> None:
    """Serialised calls: cancelling a call that has not been sent yet changes nothing."""

    async def slow_echo(peer: RawPeer) -> None:
        while True:
            text = await peer.receive_text()
            if text == '{"type":"close"}':
                await peer.close(1000)
                return
            await anyio.sleep(0.3)
            await peer.send_text(encode_frame(Observation({"echoed": str(text)}, 0.0, False)))

    results: list[str] = []

    async def first(env: EnvClient) -> None:
        results.append((await env.step({"message": "first"})).observation["echoed"])

    async with raw_server(slow_echo) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(first, env)
                    await anyio.sleep(0.05)  # first is now in flight
                    with anyio.move_on_after(0.1):
                        await env.step({"message": "never sent"})
                assert results == ['{"type":"step","data":{"message":"first"}}']
                later = await env.step({"message": "later"})
    assert later.observation["echoed"] == '{"type":"step","data":{"message":"later"}}'


async def test_cancelling_the_whole_client_block_leaves_nothing_behind() -> None:
    async def silent(peer: RawPeer) -> None:
        await peer.pump()

    async with raw_server(silent) as url:
        with anyio.fail_after(5):
            with anyio.move_on_after(0.2) as scope:
                async with EnvClient(url) as env:
                    await env.step({"message": "never answered"})
            assert scope.cancelled_caught
        assert client_tasks() == []
        with pytest.raises(NotConnected):
            await env.step({"message": "after"})


async def test_a_malformed_websocket_frame_is_a_protocol_violation() -> None:
    """A text frame that is not UTF-8 (WS-CONN-3) is the server's fault, reported as such."""
    close_codes: list[int | None] = []

    async def garbling(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.stream.send(b"\x81\x02\xff\xfe")  # FIN + text, 2 bytes, invalid UTF-8
        try:
            await peer.pump()
        except PeerClosed as closed:
            close_codes.append(closed.code)

    async with raw_server(garbling) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(5), pytest.raises(ProtocolViolation, match="invalid WebSocket frame"):
                await env.step({"message": "hi"})
        with anyio.fail_after(5):
            while not close_codes:
                await anyio.sleep(0.01)
    assert close_codes == [1007]  # invalid frame payload data


async def test_a_fragmented_message_over_the_limit_is_refused() -> None:
    """The limit applies to the whole message, not to each fragment."""

    async def fragments(peer: RawPeer) -> None:
        await peer.receive_text()
        piece = "x" * (400 * 1024)
        await peer.stream.send(peer.ws.send(TextMessage(data='{"pad":"', message_finished=False)))
        for _ in range(3):
            await peer.stream.send(peer.ws.send(TextMessage(data=piece, message_finished=False)))
        await peer.stream.send(peer.ws.send(TextMessage(data='"}', message_finished=True)))
        await peer.pump()

    async with raw_server(fragments) as url:
        async with EnvClient(url, max_message_size_mb=1.0) as env:
            with anyio.fail_after(5), pytest.raises(MessageTooLarge) as caught:
                await env.step({"message": "hi"})
    assert caught.value.size > 1024 * 1024 and caught.value.limit == 1024 * 1024


@pytest.mark.parametrize(
    ("send", "complaint"),
    [
        (lambda ws: ws.send(BytesMessage(data=b'{"type":"state","data":{}}')), "Binary frames"),
        (
            lambda ws: ws.send(TextMessage(data='{"type":"state","data":{"episode_id":null,"step_count":0}}')),
            "state frame answered step",
        ),
    ],
    ids=["binary-frame", "wrong-answer-type"],
)
async def test_frames_that_cannot_answer_the_request_are_protocol_violations(
    send: Callable[[WSConnection], bytes], complaint: str
) -> None:
    async def answering(peer: RawPeer) -> None:
        await peer.receive_text()
        await peer.stream.send(send(peer.ws))
        await peer.pump()

    async with raw_server(answering) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(5), pytest.raises(ProtocolViolation, match=complaint):
                await env.step({"message": "hi"})
            with pytest.raises(ConnectionDropped):
                await env.state()


async def test_an_unrequested_frame_before_a_request_is_a_protocol_violation() -> None:
    """WS-ORDER-2: only an error frame may arrive unrequested (before a close)."""

    async def chatty(peer: RawPeer) -> None:
        await peer.send_text(encode_frame(Observation({"unasked": True}, 0.0, False)))
        await peer.pump()

    async with raw_server(chatty) as url:
        async with EnvClient(url) as env:
            await anyio.sleep(0.1)
            with anyio.fail_after(5), pytest.raises(ProtocolViolation, match="unrequested observation"):
                await env.step({"message": "hi"})
