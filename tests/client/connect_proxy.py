"""A small HTTP CONNECT proxy for the tests (anyio; runs in the test's event loop)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import anyio
import anyio.abc
from anyio.abc import SocketAttribute


@dataclass
class ProxyLog:
    """The proxy's URL and every request head it received (method, target, headers)."""

    url: str
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


async def _relay(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream, scope: anyio.CancelScope) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
        async for chunk in source:
            await sink.send(chunk)
    scope.cancel()


@contextlib.asynccontextmanager
async def connect_proxy(*, status: int = 200, hosts: Mapping[str, str] | None = None) -> AsyncIterator[ProxyLog]:
    """Serve a CONNECT proxy on 127.0.0.1; ``hosts`` maps names it resolves itself;
    a ``status`` other than 200 refuses every tunnel with that status."""
    names = dict(hosts or {})

    async def handle(client: anyio.abc.SocketStream) -> None:
        async with client:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await client.receive()
            request, rest = head.split(b"\r\n\r\n", 1)
            first, *header_lines = request.decode("latin-1").split("\r\n")
            method, target, _ = first.split(" ")
            headers = {
                name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)
            }
            log.requests.append((method, target, headers))
            if status != 200:
                await client.send(f"HTTP/1.1 {status} Refused\r\nContent-Length: 0\r\n\r\n".encode())
                return
            host, port = target.rsplit(":", 1)
            upstream = await anyio.connect_tcp(names.get(host, host), int(port))
            async with upstream:
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    await upstream.send(rest)
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(_relay, client, upstream, task_group.cancel_scope)
                    task_group.start_soon(_relay, upstream, client, task_group.cancel_scope)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    log = ProxyLog(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}")
    async with listener, anyio.create_task_group() as task_group:
        task_group.start_soon(listener.serve, handle)
        try:
            yield log
        finally:
            task_group.cancel_scope.cancel()
