"""The fresh environments of the stateless routes (``POST /reset``, ``POST /step``,
``GET /state``: ``HTTP-4``) and what they hold while they live (``HTTP-6``).

By default each holds a session slot, so HTTP requests and sessions share
``max_concurrent_envs``: a request that finds none free is answered 503. An environment
served from the app upstream's ``create_app`` built (``openenv-anyio serve
my_env.server.app:app``) says otherwise (``HTTP_REQUESTS_HOLD_SESSION_SLOTS = False``): as
upstream's server does, its stateless requests hold no slot and are never refused for
capacity; they run at most :data:`UPSTREAM_STATELESS_REQUESTS` at once (upstream runs them on
a pool of that many threads) and the others wait their turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Final

import trio

from ..context import ServerContext
from ..execution.bound_env import BoundEnv

__all__ = ["UPSTREAM_STATELESS_REQUESTS", "StatelessEnvs"]

#: the stateless requests of an upstream app that run at once (upstream's thread pool size)
UPSTREAM_STATELESS_REQUESTS: Final = 32


class StatelessEnvs:
    """Opens the environment of one stateless request, as the served environment says."""

    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        holds_slot = getattr(ctx.factory, "HTTP_REQUESTS_HOLD_SESSION_SLOTS", True) is not False
        self._turns = None if holds_slot else trio.CapacityLimiter(UPSTREAM_STATELESS_REQUESTS)

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[BoundEnv]:
        """A fresh environment, closed when the block ends; raises
        :class:`~openenv_anyio.server.context.AtCapacity` when it must hold a slot and none is free."""
        if self._turns is None:
            async with self._ctx.fresh_env() as env:
                yield env
            return
        async with self._turns, self._ctx.fresh_env(counted=False) as env:
            yield env
