"""A loopback TCP proxy that cuts connections where a test tells it to (fault injection).

It runs trio on a thread of its own, so clients on either anyio backend can go through it.
Each chunk it forwards is offered to a :class:`CutPlan`; a cut drops that chunk and closes
both sides at once, as a network failure would. ``cut_all`` cuts every open connection
(idle between requests), ``freeze`` stops forwarding without closing (a half-open path),
``refuse`` turns new connections away.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import queue
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import trio

TIMEOUT_S: Final = 10.0


@dataclass
class CutPlan:
    """Where to cut, decided chunk by chunk with a seeded generator (reproducible).

    ``data_rate``: chance to cut a request (client to server) or a reply (server to client)
    chunk; ``handshake_rate``: chance to cut a connection's first chunk either way. A
    connection after one cut in its handshake is never cut in its own handshake, so a
    resume needs at most two tries. Nothing is cut before :attr:`active` is set (the test
    sets it once the session exists: a session that never opened has nothing to resume).
    """

    seed: int = 1
    data_rate: float = 0.0
    handshake_rate: float = 0.0
    active: bool = False
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def cut(self, chunk_index: int, handshake_immune: bool) -> bool:
        if not self.active:
            return False
        if chunk_index == 0:
            return not handshake_immune and self.rng.random() < self.handshake_rate
        return self.rng.random() < self.data_rate


class _Link:
    def __init__(self, client: trio.SocketStream, server: trio.SocketStream, immune: bool) -> None:
        self.client = client
        self.server = server
        self.handshake_immune = immune
        self.cut_in_handshake = False
        self.frozen = False
        self.done = trio.Event()

    async def close(self) -> None:
        for stream in (self.client, self.server):
            with contextlib.suppress(trio.TrioInternalError, trio.BrokenResourceError, trio.ClosedResourceError):
                await stream.aclose()
        self.done.set()


class CuttingProxy:
    """Forward 127.0.0.1:<port> to ``target`` (host, port), cutting as the plan says."""

    def __init__(self, target: tuple[str, int], plan: CutPlan | None = None) -> None:
        self.target = target
        self.url = ""  # set once running
        self.plan = plan or CutPlan()
        self.cuts: collections.Counter[str] = collections.Counter()
        self.connections = 0
        #: the first chunk each connection sent (its opening handshake request), in order
        self.handshakes: list[bytes] = []
        self.refusing = False
        self._links: set[_Link] = set()
        self._last_cut_in_handshake = False
        self._token: trio.lowlevel.TrioToken | None = None

    # -- control from the test's thread --------------------------------------------------

    def _call(self, fn: object) -> None:
        trio.from_thread.run(fn, trio_token=self._token)  # type: ignore[arg-type]

    def cut_all(self) -> int:
        """Cut every open connection now (an idle connection breaking between requests)."""
        count: list[int] = []

        async def cut() -> None:
            links = list(self._links)
            count.append(len(links))
            self.cuts["idle"] += len(links)
            for link in links:
                await link.close()

        self._call(cut)
        return count[0]

    def freeze(self) -> None:
        """Stop forwarding on every open connection, keeping the sockets open (half-open)."""

        async def freeze() -> None:
            for link in self._links:
                link.frozen = True

        self._call(freeze)

    def refuse(self, refusing: bool = True) -> None:
        """Close new connections at once (the server looks unreachable)."""
        self.refusing = refusing

    # -- the proxy -----------------------------------------------------------------------

    async def _pump(self, link: _Link, source: trio.SocketStream, sink: trio.SocketStream, kind: str) -> None:
        index = 0
        try:
            while True:
                data = await source.receive_some(65536)
                if not data:
                    break
                while link.frozen:
                    await trio.sleep(3600)
                if self.plan.cut(index, link.handshake_immune):
                    self.cuts["handshake" if index == 0 else kind] += 1
                    link.cut_in_handshake = index == 0
                    break
                if index == 0 and kind == "request":
                    self.handshakes.append(data)
                index += 1
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await link.close()

    async def _serve_one(self, client: trio.SocketStream) -> None:
        if self.refusing:
            await client.aclose()
            return
        self.connections += 1
        try:
            server = await trio.open_tcp_stream(*self.target)
        except OSError:
            await client.aclose()
            return
        link = _Link(client, server, immune=self._last_cut_in_handshake)
        self._links.add(link)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, link, client, server, "request")
                nursery.start_soon(self._pump, link, server, client, "reply")
                await link.done.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._links.discard(link)
            self._last_cut_in_handshake = link.cut_in_handshake
            await link.close()

    async def _main(self, started: queue.SimpleQueue[object], stop: trio.Event) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, self._serve_one, 0, host="127.0.0.1"))
            started.put(listeners[0].socket.getsockname()[1])
            await stop.wait()
            nursery.cancel_scope.cancel()

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """Run the proxy on a thread; yields its base URL (``http://127.0.0.1:PORT``)."""
        started: queue.SimpleQueue[object] = queue.SimpleQueue()
        stop_holder: list[trio.Event] = []

        async def main() -> None:
            stop = trio.Event()
            stop_holder.append(stop)
            await self._main(started, stop)

        def thread_main() -> None:
            try:
                trio.run(main)
            except BaseException as exc:  # reported to the test's thread
                started.put(exc)

        thread = threading.Thread(target=thread_main, name="cutting-proxy", daemon=True)
        thread.start()
        port = started.get(timeout=TIMEOUT_S)
        if isinstance(port, BaseException):
            raise RuntimeError(f"proxy failed to start: {port!r}")
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            trio.from_thread.run_sync(stop_holder[0].set, trio_token=self._token)
            thread.join(TIMEOUT_S)
            if thread.is_alive():
                raise RuntimeError("proxy thread did not stop")
