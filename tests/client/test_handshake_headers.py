"""``EnvClient(headers=...)``: extra headers on the opening handshake (a bearer token for a
private deployment), checked when the client is made, never shown, on both anyio backends."""

from __future__ import annotations

import logging

import anyio
import pytest

from openenv_anyio.client import EnvClient, HandshakeRejected

from .raw_server import RawPeer, echo_answers, raw_server

SECRET = "Bearer s3cr3t-t0ken-value"


@pytest.mark.anyio
async def test_headers_reach_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[list[tuple[bytes, bytes]]] = []

    async def handler(peer: RawPeer) -> None:
        request = await peer.accept()
        seen.append(list(request.extra_headers))
        await echo_answers(peer)

    async with raw_server(handler, handshake=False) as url:
        with anyio.fail_after(10):
            async with EnvClient(url, headers={"Authorization": SECRET, "X-Tenant": "blue"}) as env:
                await env.step({"message": "hi"})
                assert SECRET not in repr(env)
    (headers,) = seen
    assert (b"authorization", SECRET.encode()) in headers and (b"x-tenant", b"blue") in headers
    assert SECRET not in caplog.text


@pytest.mark.anyio
async def test_a_rejected_handshake_does_not_echo_the_headers() -> None:
    """A server refusing the credentials: the error names the status, not what was sent."""

    async def handler(peer: RawPeer) -> None:
        await peer.stream.receive()  # the upgrade request
        await peer.stream.send(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 12\r\n\r\nunauthorized")

    async with raw_server(handler, handshake=False) as url:
        with anyio.fail_after(10), pytest.raises(HandshakeRejected) as rejected:
            async with EnvClient(url, headers={"Authorization": SECRET}):
                pass
    assert rejected.value.status == 401 and "s3cr3t" not in str(rejected.value)


@pytest.mark.parametrize(
    ("headers", "complaint"),
    [
        ({"Bad Name": "x"}, "not an HTTP field name"),
        ({"X-Token": "a\r\nInjected: yes"}, "no line breaks"),
        ({"X-Token": " padded"}, "surrounding whitespace"),
        ({"X-Token": 5}, "must be a str"),
        ({"Host": "elsewhere"}, "set by the client itself"),
        ({"Sec-WebSocket-Protocol": "other"}, "set by the client itself"),
        ({"OpenEnv-Resume-Token": "x"}, "set by the client itself"),
    ],
)
def test_bad_headers_are_refused_when_the_client_is_made(headers: dict[str, object], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint) as refused:
        EnvClient("http://127.0.0.1:9", headers=headers)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value) and "Injected" not in str(refused.value)
