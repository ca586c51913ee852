"""How an environment's episode is brought back in another server process: the author's side.

A server that keeps its sessions in a store (so that an episode outlives a restart) needs a
way to bring each session's environment back to where its episode was. There are three
(:class:`RestoreWay`), and :func:`restore_way` tells which one an environment offers:

- ``SNAPSHOT``: the environment defines ``snapshot()``, returning its episode as a JSON-able
  value or as ``bytes``, and ``restore(snapshot)``, which puts a fresh instance back into
  that episode (each may be ``async def``). Exact and cheap: the way to prefer.
- ``REPLAY``: the environment declares ``DETERMINISTIC = True``: the same ``reset``
  arguments (seed included) and the same actions always give the same answers. A fresh
  instance is reset with the recorded arguments and stepped with the recorded actions, and
  every answer is checked against the recorded one (``core.replay``): a difference ends the
  session with ``REPLAY_MISMATCH``, never a silently different episode.
- ``NONE``: neither; its sessions end with a restart.

An environment (or an adapter) may also say it outright with a ``RESTORE_WAY`` attribute
(a :class:`RestoreWay`), which wins over what its methods suggest: the Gymnasium adapter
says ``SNAPSHOT`` only for environments whose state pickles safely.

A snapshot is kept as a :class:`Snapshot`: its bytes, and whether they are JSON or opaque.
:func:`seal_snapshot` checks what ``snapshot()`` returned (a JSON-able value, or bytes) and
that it is within the size limit; :meth:`Snapshot.value` gives back what ``restore``
receives. No I/O happens here: the server decides when and where the methods run.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "RestoreFailed",
    "RestoreWay",
    "Snapshot",
    "SnapshotError",
    "SnapshotFailed",
    "SnapshotTooLarge",
    "restore_way",
    "seal_snapshot",
]

#: The largest snapshot kept by default (bytes, after JSON encoding): 16 MiB. A server may
#: set another limit; a session kept in a store is read back whole at a restart.
MAX_SNAPSHOT_BYTES: Final = 16 * 1024 * 1024


class RestoreWay(enum.StrEnum):
    """How an environment's episode can be brought back (``GET /metadata``'s ``restore``)."""

    SNAPSHOT = "snapshot"  # snapshot() and restore(snapshot)
    REPLAY = "replay"  # DETERMINISTIC: the recorded reset and actions, answers checked
    NONE = "none"  # its sessions end with the server


class SnapshotError(Exception):
    """An episode could not be kept or brought back by snapshot (the session it concerns ends)."""


class SnapshotFailed(SnapshotError):
    """``snapshot()`` raised, or returned something that is neither JSON-able nor bytes."""


class SnapshotTooLarge(SnapshotError):
    """A snapshot is larger than the limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the snapshot is {size} bytes, more than the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class RestoreFailed(SnapshotError):
    """``restore(snapshot)`` raised: the episode cannot be brought back."""


def _has(env_or_class: Any, name: str) -> bool:
    return callable(getattr(env_or_class, name, None))


def restore_way(env_or_class: Any, *, deterministic: bool | None = None) -> RestoreWay:
    """How an environment (class or instance) can be brought back.

    A declared ``RESTORE_WAY`` wins; else ``SNAPSHOT`` when it has both ``snapshot`` and
    ``restore``; else ``REPLAY`` when it is deterministic (``deterministic``, a server
    operator's word, overrides the environment's ``DETERMINISTIC``); else ``NONE``.
    """
    declared = getattr(env_or_class, "RESTORE_WAY", None)
    if isinstance(declared, RestoreWay):
        return declared
    if _has(env_or_class, "snapshot") and _has(env_or_class, "restore"):
        return RestoreWay.SNAPSHOT
    if deterministic is None:
        deterministic = getattr(env_or_class, "DETERMINISTIC", False) is True
    return RestoreWay.REPLAY if deterministic else RestoreWay.NONE


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A kept snapshot: ``data`` is the canonical JSON (UTF-8) of the value when ``is_json``,
    else the bytes ``snapshot()`` returned."""

    data: bytes
    is_json: bool

    def value(self) -> Any:
        """What ``restore`` receives: the JSON value decoded again, or the bytes."""
        return json.loads(self.data) if self.is_json else self.data


#: the canonical JSON of a snapshot (one encoder, made once)
_CANONICAL: Final = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def seal_snapshot(value: Any, *, limit: int = MAX_SNAPSHOT_BYTES) -> Snapshot:
    """``value`` (what ``snapshot()`` returned) as a :class:`Snapshot`.

    Raises :class:`SnapshotFailed` when it is neither bytes nor a JSON value (a NaN or an
    infinity is not one: it would not come back the same), :class:`SnapshotTooLarge` when
    it is over ``limit`` bytes.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        data, is_json = bytes(value), False
    else:
        try:
            text = _CANONICAL.encode(value)
        except (TypeError, ValueError, RecursionError) as exc:
            raise SnapshotFailed(f"snapshot() returned a value that is not JSON: {exc}") from None
        data, is_json = text.encode(), True
    if len(data) > limit:
        raise SnapshotTooLarge(len(data), limit)
    return Snapshot(data, is_json)
