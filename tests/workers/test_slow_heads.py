"""Slow request heads under ``--workers``: the router reads a head as its bytes arrive (not
by peeking again every few milliseconds while it waits), and a head that does not arrive
whole within the keep-alive timeout closes the connection, as a single process closes it.

On a real loopback connection and the router of a worker (one process here; its table is
a file, its inbox a socket pair). What is counted is how often the router's task runs while
the head dribbles in: a count, not a time."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from openenv_anyio.server.workers.routing import OwnerRouter
from openenv_anyio.server.workers.table import WorkerTable

HEAD = b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n"
PIECES = [HEAD[start : start + 8] for start in range(0, len(HEAD), 8)]
ROUTED = "routed connection"


class TaskSteps(trio.abc.Instrument):
    """How many times the task named :data:`ROUTED` ran."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name == ROUTED:
            self.steps += 1


@pytest.fixture
def router(tmp_path: Path) -> Iterator[OwnerRouter]:
    table = WorkerTable.create(tmp_path / "table", 2, None)
    inbox, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        yield OwnerRouter(0, table, inbox, [inbox, peer], head_timeout_s=2.0)
    finally:
        inbox.close()
        peer.close()
        table.close()


async def _connected() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    served = await listeners[0].accept()
    await listeners[0].aclose()
    return client, served


def test_a_slow_head_is_read_as_it_arrives(router: OwnerRouter) -> None:
    steps = TaskSteps()
    served_heads: list[bytes] = []

    async def main() -> None:
        client, served = await _connected()

        async def handler(stream: trio.SocketStream) -> None:
            served_heads.append(await stream.receive_some(1024))

        routed, _ = router.wrap(handler, [], trio.move_on_after)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(routed, served, name=ROUTED)
            for piece in PIECES:  # the head in pieces, a pause after each
                await client.send_all(piece)
                await trio.sleep(0.1)
        await client.aclose()

    trio.run(main, instruments=[steps])
    assert served_heads == [HEAD]  # served here, its bytes still in the socket
    # about once per piece; peeking every 2 ms ran it about 50 times per pause
    assert steps.steps <= 3 * len(PIECES) + 5, steps.steps


def test_a_head_that_never_completes_is_closed(router: OwnerRouter) -> None:
    handled: list[object] = []

    async def main() -> bytes:
        client, served = await _connected()

        async def handler(stream: trio.SocketStream) -> None:
            handled.append(stream)

        routed, _ = router.wrap(handler, [], trio.move_on_after)
        await client.send_all(HEAD[:10])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(routed, served)
        with trio.fail_after(30):
            return await client.receive_some(1024)

    assert trio.run(main) == b""  # closed, as a single process closes it after keep_alive_timeout
    assert handled == []
