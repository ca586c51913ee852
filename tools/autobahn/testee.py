"""Autobahn|Testsuite testees on the real WebSocket paths of openenv-anyio.

``server``: an :class:`~openenv_anyio.server.EnvServer` (our Hypercorn configuration, the
Hypercorn adapter's patches, the server's size limits and budget of bytes in flight) whose
ASGI application is an echo handler instead of the sessions, served at
``ws://HOST:PORT/ws``. ``--path direct`` runs it on the direct path that carries ``/ws``
(the connection's own task, :class:`openenv_anyio.ws.WebSocketConnection` after Hypercorn's
handshake); ``--path asgi`` on the ASGI path that carries ``/ws/ui``, ``WS /mcp``, TLS and
HTTP/2 (Hypercorn's WebSocket stream with the adapter's additions). Both accept as the
server's endpoints do, asking for close frames that name why on bytes that break RFC 6455
(``WS-CLOSE-3``), without the ``/ws`` session's ``INVALID_JSON`` text before a 1007 (an echo
has no JSON to refuse). Point Autobahn's ``fuzzingclient`` at it.

``client``: the client's transport (:class:`openenv_anyio.client.transport.WebSocketTransport`,
its reader task and its read hand-off, on asyncio or trio) speaking Autobahn's
``fuzzingserver`` protocol: ``/getCaseCount``, then ``/runCase?case=N&agent=A`` for every case
(each message echoed), then ``/updateReports?agent=A``.

Run from the repository root (``tools/autobahn/run`` does, for every path and backend).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import trio

from openenv_anyio.client.errors import ConnectionClosedByServer, EnvClientError
from openenv_anyio.client.transport import WebSocketTransport
from openenv_anyio.client.urls import WebSocketAddress
from openenv_anyio.core import CloseCode
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.hypercorn_adapter import HELD_TEXT, INVALID_TEXT_REPLY, PEER_CLOSE_EVENT, HeldText

PATHS = ("direct", "asgi")
BACKENDS = ("trio", "asyncio")
#: The client's inbound message limit (the client's default, ``max_message_size_mb=100``).
CLIENT_MAX_MESSAGE = 100 * 1024 * 1024
#: The longest one fuzzingserver case may take here (its slowest take a few seconds).
CASE_TIMEOUT_S = 120.0

AsgiReceive = Callable[[], Awaitable[dict[str, Any]]]
AsgiSend = Callable[[dict[str, Any]], Awaitable[None]]


# -- server ---------------------------------------------------------------------------


async def echo(scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
    """Echo every message of one WebSocket connection (an ASGI handler, on either path)."""
    if scope["type"] != "websocket" or (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept", INVALID_TEXT_REPLY: None})  # WS-CLOSE-3, as /ws/ui asks
    await send({"type": PEER_CLOSE_EVENT, "callback": lambda code: None})  # as /ws asks: called before the answer
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message["type"] != "websocket.receive":
            continue
        held: HeldText | None = message.get(HELD_TEXT)
        if held is not None:  # a large text message of the direct path: its UTF-8 bytes, checked
            try:
                if held.data is None:  # the budget had no room: refused as /ws refuses it
                    await send(
                        {"type": "websocket.close", "code": int(CloseCode.TRY_AGAIN_LATER), "reason": "server busy"}
                    )
                    return
                text = held.data.decode()
            finally:
                held.release()
            await send({"type": "websocket.send", "text": text})
        elif message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


class EchoApplication:
    """The ASGI application the server testee serves in place of the server's router: ``/ws``
    echoes, on the direct path (``direct``) or the ASGI path; anything else is a 404."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: set by :meth:`EnvServer.serve`: whether the Hypercorn adapter is engaged
        self.direct = True

    async def __call__(self, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            await echo(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": int(CloseCode.POLICY_VIOLATION)})
        elif scope["type"] == "http":
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
        elif scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].removeprefix("lifespan.")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return

    def direct_websocket(self, scope: dict[str, Any]) -> Callable[..., Awaitable[None]] | None:
        """The direct path's choice (as the server's router makes it): ``/ws`` with ``--path direct``."""
        if self.path == "direct" and self.direct and scope["path"] == "/ws":
            return echo
        return None  # served as /ws/ui and WS /mcp are: spawned the ASGI way


async def serve(host: str, port: int, path: str) -> None:
    server = EnvServer(EchoEnv, ServerConfig(host=host, port=port))
    application = EchoApplication(path)
    server.asgi = application  # type: ignore[assignment]  # the echo in place of the router
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        if not application.direct and path == "direct":
            raise SystemExit("testee: the Hypercorn adapter is not engaged: no direct path to test")
        print(f"testee: {path} path listening on {url.replace('http', 'ws', 1)}/ws", flush=True)
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                server.shutdown()
                break


# -- client ---------------------------------------------------------------------------


def _address(base: WebSocketAddress, target: str) -> WebSocketAddress:
    return WebSocketAddress(base.scheme, base.host, base.port, target)


async def _open(address: WebSocketAddress) -> WebSocketTransport:
    return await WebSocketTransport.open(address, max_message_size=CLIENT_MAX_MESSAGE)


async def run_case(address: WebSocketAddress) -> None:
    """Echo every message of one connection until the fuzzing server closes it."""
    transport = await _open(address)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(transport.run_reader)
        try:
            while True:
                message = await transport.receive()
                if isinstance(message, str):
                    await transport.send_text(message)
                else:
                    await transport.send_binary(message)
        except EnvClientError:
            pass  # the connection ended: the case is over (the fuzzing server judges how)
        finally:
            await transport.abort()


async def case_count(address: WebSocketAddress) -> int:
    transport = await _open(address)
    try:
        text = await transport.receive()
    finally:
        await transport.abort()
    return int(text)


async def update_reports(address: WebSocketAddress) -> None:
    transport = await _open(address)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(transport.run_reader)
        try:
            await transport.receive()
        except ConnectionClosedByServer:
            pass
        finally:
            await transport.abort()


async def drive(url: str, agent: str) -> int:
    """Run every case the fuzzing server at ``url`` offers; the number of cases that hung."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or parts.hostname is None:
        raise SystemExit(f"testee: --url must be ws://HOST:PORT, not {url!r}")
    base = WebSocketAddress(parts.scheme, parts.hostname, parts.port or 80, "/")
    count = await case_count(_address(base, "/getCaseCount"))
    print(f"testee: {count} cases for agent {agent}", flush=True)
    hung = 0
    for case in range(1, count + 1):
        with anyio.move_on_after(CASE_TIMEOUT_S) as scope:
            await run_case(_address(base, f"/runCase?case={case}&agent={quote(agent)}"))
        if scope.cancelled_caught:
            hung += 1
            print(f"testee: case {case} did not end within {CASE_TIMEOUT_S:g} s", file=sys.stderr, flush=True)
    await update_reports(_address(base, f"/updateReports?agent={quote(agent)}"))
    return hung


# -- command line ---------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/autobahn/testee.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    roles = parser.add_subparsers(dest="role", required=True)
    server = roles.add_parser("server", help="an echo server on the server's WebSocket paths (for fuzzingclient)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--port", type=int, required=True, help="port to listen on (0: any free port)")
    server.add_argument(
        "--path",
        choices=PATHS,
        default="direct",
        help="direct: the path /ws takes (default); asgi: the path /ws/ui, WS /mcp, TLS and HTTP/2 take",
    )
    client = roles.add_parser("client", help="the client's transport echoing for a fuzzingserver")
    client.add_argument("--url", required=True, help="the fuzzing server, ws://HOST:PORT")
    client.add_argument("--backend", choices=BACKENDS, default="trio", help="the event loop (default trio)")
    client.add_argument("--agent", help="the agent name in the reports (default openenv-anyio-client-BACKEND)")
    args = parser.parse_args(argv)
    if args.role == "server" and not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, not {args.port}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.role == "server":
        try:
            trio.run(serve, args.host, args.port, args.path)
        except KeyboardInterrupt:
            pass
        return 0
    agent = args.agent or f"openenv-anyio-client-{args.backend}"
    hung = anyio.run(partial(drive, args.url, agent), backend=args.backend)
    return 1 if hung else 0


if __name__ == "__main__":
    sys.exit(main())
