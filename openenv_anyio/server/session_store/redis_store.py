"""A session store on a Redis server (``redis://HOST:PORT/N``): for a fleet of servers on
several machines sharing their kept sessions.

Every session is one field of one Redis hash (:data:`HASH_KEY` in database ``N``), keyed by
its key's digest, and one member of a sorted set (:data:`SAVED_KEY`) scored by when it was
written: a write of several sessions is one ``MULTI``/``EXEC`` (all or none), taking one is
``HGET`` and ``HDEL`` in one (two servers never both take it), pruning is one Lua script. The client
is the ``redis`` package's (``pip install 'openenv-anyio[redis]'``), used from worker
threads (its connection pool is thread-safe), so the store works on any event loop. A
Redis server that does not answer within :data:`TIMEOUT_S`, or goes away, makes the call
raise :class:`StoreUnavailable`: nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio.to_thread

from .errors import RecordError, StoreUnavailable
from .record import StoredSession, decode_record, encode_record
from .store import LoadedSessions

__all__ = ["HASH_KEY", "SAVED_KEY", "TIMEOUT_S", "RedisStore", "redacted"]

#: The hash that holds the kept sessions, in the URL's database.
HASH_KEY: Final = "openenv-anyio:kept-sessions"
#: The sorted set of the kept sessions' digests by when they were written.
SAVED_KEY: Final = "openenv-anyio:kept-sessions:saved"
#: Forget, atomically, every session written before ARGV[1].
_PRUNE: Final = """
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
for _, digest in ipairs(old) do
    redis.call('HDEL', KEYS[1], digest)
    redis.call('ZREM', KEYS[2], digest)
end
return #old
"""
#: How long a connection attempt or a command may take before the store counts as gone.
TIMEOUT_S: Final = 5.0

Result = TypeVar("Result")


def redacted(url: str) -> str:
    """``url`` with its password, if any, shown as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class RedisStore:
    """A :class:`~.store.SessionStore` on a Redis server (see the module docstring)."""

    def __init__(self, url: str, client: Any) -> None:
        self._name = redacted(url)
        self._client: Any = client

    @property
    def name(self) -> str:
        return self._name

    @classmethod
    async def open(cls, url: str) -> RedisStore:
        """The store at ``url``, once its server answers a ``PING``; :class:`StoreUnavailable`
        if the package is missing, the URL is bad or the server does not answer."""
        try:
            import redis
        except ImportError:
            raise StoreUnavailable(
                f"the session store {redacted(url)} needs the redis package: pip install 'openenv-anyio[redis]'"
            ) from None
        try:
            client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        except ValueError as exc:
            raise StoreUnavailable(f"cannot open the session store {redacted(url)}: {exc}") from None
        store = cls(url, client)
        try:
            await store._run(lambda redis_client: redis_client.ping())
        except StoreUnavailable as exc:
            client.close()
            raise StoreUnavailable(f"cannot open the session store {store.name}: {exc.__cause__ or exc}") from None
        return store

    async def _run(self, work: Callable[[Any], Result]) -> Result:
        import redis

        client = self._client
        if client is None:
            raise StoreUnavailable(f"the session store {self._name} is closed")

        def call() -> Result:
            try:
                return work(client)
            except redis.RedisError as exc:
                raise StoreUnavailable(f"the session store {self._name} failed: {exc}") from exc

        return await anyio.to_thread.run_sync(call)

    async def put(self, sessions: Sequence[StoredSession]) -> None:
        fields = {session.key_digest: encode_record(session) for session in sessions}
        saved = {session.key_digest: session.saved_at for session in sessions}

        def write(client: Any) -> None:
            pipe = client.pipeline(transaction=True)
            pipe.hset(HASH_KEY, mapping=fields)
            pipe.zadd(SAVED_KEY, saved)
            pipe.execute()

        if fields:
            await self._run(write)

    async def get(self, digest: str) -> StoredSession | None:
        data = await self._run(lambda client: client.hget(HASH_KEY, digest))
        return None if data is None else decode_record(data, key=digest)

    async def take(self, digest: str) -> StoredSession | None:
        def remove(client: Any) -> bytes | None:
            pipe = client.pipeline(transaction=True)
            pipe.hget(HASH_KEY, digest)
            pipe.hdel(HASH_KEY, digest)
            pipe.zrem(SAVED_KEY, digest)
            data, _, _ = pipe.execute()
            return data  # type: ignore[no-any-return]

        data = await self._run(remove)
        return None if data is None else decode_record(data, key=digest)

    async def delete(self, digests: Sequence[str]) -> None:
        def remove(client: Any) -> None:
            pipe = client.pipeline(transaction=True)
            pipe.hdel(HASH_KEY, *digests)
            pipe.zrem(SAVED_KEY, *digests)
            pipe.execute()

        if digests:
            await self._run(remove)

    async def prune(self, saved_before: float) -> int:
        return int(await self._run(lambda client: client.eval(_PRUNE, 2, HASH_KEY, SAVED_KEY, repr(saved_before))))

    async def load_all(self) -> LoadedSessions:
        def read(client: Any) -> dict[bytes, bytes]:
            return dict(client.hscan_iter(HASH_KEY, count=1000))

        loaded = LoadedSessions()
        for key, data in (await self._run(read)).items():
            try:
                loaded.sessions.append(decode_record(data, key=key.decode()))
            except RecordError as exc:
                loaded.faults.append(exc)
        return loaded

    async def count(self) -> int:
        return int(await self._run(lambda client: client.hlen(HASH_KEY)))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await anyio.to_thread.run_sync(client.close)
