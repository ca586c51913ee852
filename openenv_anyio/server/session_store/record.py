"""A kept session as a session store holds it, and its one codec.

:class:`StoredSession` is what a server writes out for a session that should outlive the
process: its kind and public id, the *digest* of the key that finds it (a resumable
session's resume token, a hosted session's secret id: the key itself is never stored, so
a reader of the store cannot take a session over), its episode id and step count, its
exactly-once ledger (the last request and its answer, ``EXT-REQ-1``) and what brings its
environment back (:class:`StoredEnv`: a snapshot, a replay log, or nothing).

:func:`encode_record` and :func:`decode_record` are the only way in and out: JSON (UTF-8)
with a ``format`` and ``version``; a record of another version is
:class:`IncompatibleRecord`, anything malformed :class:`CorruptRecord`. The key is found by
:func:`key_digest` (SHA-256 of the key, hex): a store looks records up by it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from ...core.replay import EpisodeLog
from ...restoration import RestoreWay, Snapshot
from .errors import CorruptRecord, IncompatibleRecord

__all__ = [
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "StoredEnv",
    "StoredLedger",
    "StoredSession",
    "decode_record",
    "encode_record",
    "key_digest",
]

#: What a record says it is, and the version of its layout this module writes and reads.
RECORD_FORMAT: Final = "openenv-anyio.kept-session"
RECORD_VERSION: Final = 1
_KINDS: Final = frozenset({"resumable", "hosted"})
#: a record's JSON (one encoder, made once)
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def key_digest(key: str) -> str:
    """The digest a store finds a session by: SHA-256 of ``key`` (a resume token or a hosted
    session's secret id, 256 random bits each), hex."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredLedger:
    """The last request of a session and its answer (``EXT-REQ-1``); all None when no
    answered request is kept. ``asked`` is what the request asked, as the ledger compares it
    (a tuple of JSON values: it comes back a tuple)."""

    last_request_id: str | None = None
    asked: tuple[Any, ...] | None = None
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEnv:
    """What brings a session's environment back: a ``snapshot`` (``way`` SNAPSHOT), the
    episode's ``log`` (REPLAY), or nothing (NONE: the session cannot come back)."""

    way: RestoreWay
    snapshot: Snapshot | None = None
    log: EpisodeLog | None = None

    def __post_init__(self) -> None:
        expected = (self.way is RestoreWay.SNAPSHOT, self.way is RestoreWay.REPLAY)
        if (self.snapshot is not None, self.log is not None) != expected:
            raise ValueError(f"a {self.way.value} environment keeps exactly what its way needs")


@dataclass(frozen=True, slots=True)
class StoredSession:
    """One kept session, as a store holds it (see the module docstring)."""

    kind: str  # "resumable" (found by its resume token) or "hosted" (by its secret id)
    public_id: str  # the id dashboards and logs see
    key_digest: str  # key_digest(key): the key itself is never stored
    episode_id: str | None
    step_count: int
    ledger: StoredLedger
    env: StoredEnv
    saved_at: float  # seconds since the epoch when it was written out

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, not {self.kind!r}")


def encode_record(record: StoredSession) -> bytes:
    """``record`` as the bytes a store keeps."""
    env = record.env
    body: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "kind": record.kind,
        "public_id": record.public_id,
        "key_digest": record.key_digest,
        "episode_id": record.episode_id,
        "step_count": record.step_count,
        "ledger": {
            "last_request_id": record.ledger.last_request_id,
            "asked": None if record.ledger.asked is None else list(record.ledger.asked),
            "answer": record.ledger.answer,
        },
        "env": {
            "way": env.way.value,
            "snapshot": None
            if env.snapshot is None
            else {"json": env.snapshot.is_json, "data": base64.b64encode(env.snapshot.data).decode("ascii")},
            "log": None if env.log is None else env.log.to_json(),
        },
        "saved_at": record.saved_at,
    }
    return _ENCODER.encode(body).encode()


def _field(body: dict[str, Any], name: str, kinds: type | tuple[type, ...], where: str) -> Any:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, kinds):  # no member is a boolean
        raise CorruptRecord(f"{where}: {name} is missing or of the wrong type")
    return value


def decode_record(data: bytes, *, key: str | None = None) -> StoredSession:
    """The session :func:`encode_record` wrote. ``key`` (the digest the store found it by)
    names it in errors and must be the record's own.

    Raises :class:`IncompatibleRecord` for another version of the format, :class:`CorruptRecord`
    for anything else that is not such a record.
    """
    where = f"the kept session {key[:12]}..." if key else "a kept session"
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptRecord(f"{where} is not JSON: {exc}", key) from None
    if not isinstance(body, dict) or body.get("format") != RECORD_FORMAT:
        raise CorruptRecord(f"{where} is not a record of {RECORD_FORMAT}", key)
    version = body.get("version")
    if version != RECORD_VERSION:
        raise IncompatibleRecord(
            f"{where} is a record of version {version!r}; this server reads version {RECORD_VERSION}", key
        )
    try:
        ledger = _field(body, "ledger", dict, where)
        asked = ledger.get("asked")
        if asked is not None and not isinstance(asked, list):
            raise CorruptRecord(f"{where}: the ledger's asked is not an array", key)
        env = _field(body, "env", dict, where)
        way = RestoreWay(env.get("way"))
        snapshot = env.get("snapshot")
        log = env.get("log")
        record = StoredSession(
            kind=_field(body, "kind", str, where),
            public_id=_field(body, "public_id", str, where),
            key_digest=_field(body, "key_digest", str, where),
            episode_id=_field(body, "episode_id", (str, type(None)), where),
            step_count=_field(body, "step_count", int, where),
            ledger=StoredLedger(
                _field(ledger, "last_request_id", (str, type(None)), where),
                None if asked is None else tuple(asked),
                _field(ledger, "answer", (str, type(None)), where),
            ),
            env=StoredEnv(
                way,
                None
                if snapshot is None
                else Snapshot(base64.b64decode(snapshot["data"], validate=True), bool(snapshot["json"])),
                None if log is None else EpisodeLog.from_json(log),
            ),
            saved_at=float(_field(body, "saved_at", (int, float), where)),
        )
    except CorruptRecord as exc:
        exc.key_digest = key
        raise
    except (ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise CorruptRecord(f"{where} is malformed: {exc}", key) from None
    if record.step_count < 0:
        raise CorruptRecord(f"{where}: step_count is negative", key)
    if key is not None and record.key_digest != key:
        raise CorruptRecord(f"{where} is kept under another session's key", key)
    return record
