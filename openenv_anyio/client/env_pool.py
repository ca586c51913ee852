"""``EnvPool``: many sessions over one or many servers, owned by one task group.

    async with EnvPool(["http://a:8000", "http://b:8000"], message_timeout_s=120) as pool:
        for seed in range(64):
            pool.start_soon(agent, seed)          # agent(env, seed), each with its own session

        async with pool.session() as env:         # or one session of your own
            await env.reset()

Placement: a new session goes to the server on which this pool holds the fewest sessions
(ties: the one tried longest ago). A server that refuses because it is full
(``CAPACITY_REACHED``, or a close with 1013, ``WS-CAP-1``) is taken as "try the next one";
when every server refuses, the last refusal is raised. Any other failure (connection
refused, handshake rejected, a factory error, ...) is raised as it is: the pool never hides
a broken server behind a working one. Every :class:`EnvClient` option is accepted and
applies to every session.

Admission is known before the session is handed out: on a connection that negotiated the
resume extension the ``session`` frame proves it (``EXT-SES-1``); on a base-protocol
connection (an openenv-core server) the pool asks for ``state`` once, which a server that
refused answers with its refusal (sent before any request, ``WS-CAP-1``).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from ..core import CloseCode
from .env_client import EnvClient
from .errors import CapacityReached, ConnectionClosedByServer, EnvClientError

__all__ = ["EnvPool"]

Agent = Callable[..., Awaitable[Any]]


def _refused_for_capacity(error: EnvClientError) -> bool:
    if isinstance(error, CapacityReached):
        return True
    return isinstance(error, ConnectionClosedByServer) and error.code == CloseCode.TRY_AGAIN_LATER


class EnvPool:
    """Sessions over ``urls`` (one URL or several), placed on the least-loaded server."""

    def __init__(self, urls: str | Sequence[str], **client_options: Any) -> None:
        self.urls: tuple[str, ...] = (urls,) if isinstance(urls, str) else tuple(urls)
        if not self.urls:
            raise ValueError("an EnvPool needs at least one server URL")
        EnvClient(self.urls[0], **client_options)  # a bad option fails here, not per session
        self._options = client_options
        self._open: dict[str, int] = dict.fromkeys(self.urls, 0)
        self._last_tried: dict[str, int] = dict.fromkeys(self.urls, 0)
        self._tries = itertools.count(1)
        self._task_group: anyio.abc.TaskGroup | None = None

    def loads(self) -> dict[str, int]:
        """Sessions this pool holds now, per server URL."""
        return dict(self._open)

    async def __aenter__(self) -> EnvPool:
        if self._task_group is not None:
            raise RuntimeError("an EnvPool is entered once")
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._task_group is not None, "__aexit__ without __aenter__"
        return await self._task_group.__aexit__(exc_type, exc, tb)

    def start_soon(self, agent: Agent, *args: Any) -> None:
        """Run ``agent(env, *args)`` in the pool's task group with a session of its own
        (closed when the agent returns). A failure of an agent fails the pool's block."""
        if self._task_group is None:
            raise RuntimeError("use `async with EnvPool(...) as pool` before pool.start_soon")

        async def run() -> None:
            async with self.session() as env:
                await agent(env, *args)

        self._task_group.start_soon(run, name=f"EnvPool agent {getattr(agent, '__name__', agent)!r}")

    def _placement_order(self) -> list[str]:
        return sorted(self.urls, key=lambda url: (self._open[url], self._last_tried[url]))

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[EnvClient]:
        """A new session on the least-loaded server that admits it (closed on exit)."""
        refusal: EnvClientError | None = None
        for url in self._placement_order():
            self._last_tried[url] = next(self._tries)
            self._open[url] += 1  # counted while opening, so concurrent opens spread too
            try:
                async with contextlib.AsyncExitStack() as stack:
                    try:  # a refusal comes with the connection (negotiated) or the first answer
                        env = await stack.enter_async_context(EnvClient(url, **self._options))
                        await self._admitted(env)
                    except EnvClientError as exc:
                        if not _refused_for_capacity(exc):
                            raise
                        refusal = exc
                        continue
                    yield env
                    return
            finally:
                self._open[url] -= 1
        assert refusal is not None
        raise refusal

    @staticmethod
    async def _admitted(env: EnvClient) -> None:
        """Raise the server's refusal of this session, if it refused it."""
        if env.session is not None:  # EXT-SES-1: the session frame means admitted
            return
        await env.state()  # base protocol: a refusal was sent before any request
