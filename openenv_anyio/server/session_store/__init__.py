"""Durable stores of kept sessions: what lets an episode outlive its server process.

A kept session (:class:`StoredSession`: its ids, the digest of its key, episode, step
count, exactly-once ledger, and what brings its environment back) is written with
:func:`encode_record` into a :class:`SessionStore`: one SQLite file (:class:`SqliteStore`)
or a Redis server (:class:`RedisStore`), opened from a URL by :func:`open_session_store`.
:class:`GroupCommit` gathers concurrent writes into one transaction. ``env_keeping`` keeps a
live environment's episode for a record (:func:`keep_env`) and brings it back in a fresh one
(:func:`bring_back`).
"""

from .env_keeping import answer_of, bring_back, keep_env
from .errors import CorruptRecord, IncompatibleRecord, RecordError, StoreError, StoreUnavailable
from .group_commit import GroupCommit, group_commit
from .opening import open_session_store
from .record import (
    RECORD_FORMAT,
    RECORD_VERSION,
    StoredEnv,
    StoredLedger,
    StoredSession,
    decode_record,
    encode_record,
    key_digest,
)
from .redis_store import RedisStore
from .sqlite_store import SqliteStore
from .store import LoadedSessions, SessionStore

__all__ = [
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "CorruptRecord",
    "GroupCommit",
    "IncompatibleRecord",
    "LoadedSessions",
    "RecordError",
    "RedisStore",
    "SessionStore",
    "SqliteStore",
    "StoreError",
    "StoreUnavailable",
    "StoredEnv",
    "StoredLedger",
    "StoredSession",
    "answer_of",
    "bring_back",
    "decode_record",
    "encode_record",
    "group_commit",
    "keep_env",
    "key_digest",
    "open_session_store",
]
