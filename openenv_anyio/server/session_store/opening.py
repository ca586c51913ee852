"""A session store from its URL, as ``serve --session-store URL`` takes it."""

from __future__ import annotations

from urllib.parse import urlsplit

from .errors import StoreUnavailable
from .redis_store import RedisStore, redacted
from .sqlite_store import SqliteStore
from .store import SessionStore

__all__ = ["open_session_store"]

_SQLITE_PREFIX = "sqlite:///"
_FORMS = "a file path, sqlite:///PATH or redis://HOST:PORT/N"


async def open_session_store(url: str) -> SessionStore:
    """The store ``url`` names: a plain file path or ``sqlite:///PATH`` (SQLite; an absolute
    path is ``sqlite:////abs/path``), ``redis://HOST:PORT/N`` or ``rediss://`` (Redis).

    Raises :class:`StoreUnavailable` (one line) for a URL of another kind or a store that
    cannot be opened.
    """
    if not url.strip():
        raise StoreUnavailable(f"the session store is empty: give {_FORMS}")
    if url.startswith(_SQLITE_PREFIX):
        path = url[len(_SQLITE_PREFIX) :]
        if not path:
            raise StoreUnavailable(f"the session store {url} names no file: sqlite:///PATH")
        return await SqliteStore.open(path)
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    match scheme:
        case "":
            return await SqliteStore.open(url)
        case "redis" | "rediss":
            return await RedisStore.open(url)
        case _:
            raise StoreUnavailable(f"unknown session store {redacted(url)}: give {_FORMS}")
