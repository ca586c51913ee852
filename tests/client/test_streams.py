"""The lean TCP streams under the client transport (asyncio and trio), with real sockets."""

from __future__ import annotations

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketAttribute

from openenv_anyio.client import EnvClient
from openenv_anyio.client.asyncio_stream import AsyncioTcpStream, connect_asyncio_tcp, running_on_asyncio
from openenv_anyio.client.trio_stream import TrioTcpStream, connect_trio_tcp

pytestmark = pytest.mark.anyio


async def _connect(port: int) -> anyio.abc.ByteStream:
    if running_on_asyncio():
        return await connect_asyncio_tcp("127.0.0.1", port)
    return await connect_trio_tcp("127.0.0.1", port)


async def test_client_uses_the_lean_stream_of_its_backend(server_url: str, anyio_backend: str) -> None:
    async with EnvClient(server_url) as env:
        assert env._transport is not None
        expected = AsyncioTcpStream if anyio_backend == "asyncio" else TrioTcpStream
        assert isinstance(env._transport._stream, expected)


async def test_stream_round_trip_cancelled_read_and_end_of_stream() -> None:
    """A read cancelled while waiting loses nothing; big sends arrive whole; EOF is EndOfStream."""
    peer_ready = anyio.Event()
    received = bytearray()

    async def serve(peer: anyio.abc.SocketStream) -> None:
        async with peer:
            await peer_ready.wait()
            await peer.send(b"late")
            while len(received) < 3 * 1024 * 1024:
                received.extend(await peer.receive())

    async with await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0) as listener:
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            with anyio.fail_after(10):
                stream = await _connect(port)
                assert stream.extra(SocketAttribute.remote_address) == ("127.0.0.1", port)
                with anyio.move_on_after(0.05) as waited:
                    await stream.receive()
                assert waited.cancelled_caught
                peer_ready.set()
                assert await stream.receive() == b"late"
                await stream.send(b"x" * (3 * 1024 * 1024))  # more than the kernel buffers at once
                with pytest.raises(anyio.EndOfStream):
                    await stream.receive()
                await stream.aclose()
                with pytest.raises(anyio.ClosedResourceError):
                    await stream.receive()
            tg.cancel_scope.cancel()
    assert received == b"x" * (3 * 1024 * 1024)


def _ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",  # an address: connected directly
        "localhost",  # a name: resolved by anyio.connect_tcp
        pytest.param("::1", marks=pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")),
    ],
)
async def test_connect_socket_by_address_and_by_name(host: str) -> None:
    """Both ways give a connected, non-blocking socket with TCP_NODELAY; a closed port is a
    ConnectionRefusedError, raised or as the cause, as the transport reads it to raise
    ConnectionRefused."""
    import socket

    from openenv_anyio.client.tcp_socket import connect_socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    local = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    async with await anyio.create_tcp_listener(local_host=local, local_port=0) as listener:
        port = listener.extra(SocketAttribute.local_port)
        with anyio.fail_after(10):
            sock = await connect_socket(host, port)
            try:
                assert sock.getpeername()[1] == port
                assert not sock.getblocking()
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            finally:
                sock.close()
    with anyio.fail_after(10), pytest.raises(OSError) as refused:
        await connect_socket(host, port)  # nothing listens there any more
    assert isinstance(refused.value, ConnectionRefusedError) or isinstance(
        refused.value.__cause__, ConnectionRefusedError
    )
