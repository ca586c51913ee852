"""One session's validation record: whether telemetry is open, its capability, the seed of
the latest reset and every reset, step and state exchange as it went over the wire.

Theory of operation. A record starts ``WAITING``: a ``validation_open`` with the server's
token opens it (``OPEN``), a reset or a step first closes the window for good (``PASSED``,
``VAL-OPEN-1``). Every transition is in :data:`_TRANSITIONS`::

    WAITING  --open (right token)-->     OPEN      (the capability is made)
    WAITING  --reset or step-->          PASSED    (telemetry can no longer open)
    OPEN     --exchange recorded-->      OPEN      (until the bound: then incomplete)

A refusal changes nothing (``VAL-OPEN-2``). The record keeps the exchanges' texts, not
parsed values: a read parses fresh copies, so nothing a reader does reaches the record.
"""

from __future__ import annotations

import enum
import hmac
import secrets
from collections.abc import Mapping
from typing import Any, Final

from ...core import ErrorCode, ProtocolError, Reset, parse_json

__all__ = ["MAX_RECORD_BYTES", "RecordPhase", "SessionRecord"]

#: the most request and response bytes a record keeps; beyond it, it says it is incomplete
MAX_RECORD_BYTES: Final = 8 * 1024 * 1024
#: the telemetry's and the trajectory record's schema version
SCHEMA_VERSION: Final = 1
#: the operations a trajectory records (the exchanges a validator's collector replays)
RECORDED: Final = frozenset({"reset", "step", "state"})


class RecordPhase(enum.Enum):
    WAITING = "waiting"  # no reset yet: telemetry may open
    OPEN = "open"  # recording
    PASSED = "passed"  # reset without telemetry: it can no longer open


_TRANSITIONS: Final = {
    (RecordPhase.WAITING, "open"): RecordPhase.OPEN,
    (RecordPhase.WAITING, "episode"): RecordPhase.PASSED,
    (RecordPhase.OPEN, "episode"): RecordPhase.OPEN,
    (RecordPhase.PASSED, "episode"): RecordPhase.PASSED,
}


def _refused(reason: str) -> ProtocolError:
    return ProtocolError(ErrorCode.VALIDATION_REFUSED, f"validation telemetry refused: {reason}")


class SessionRecord:
    """The validation record of one session (see the module doc).

    ``token``: the server's validation token; ``seeded``: whether the session's environment
    applies the seed a reset gives it (:func:`~openenv_anyio.environment.takes_seed`).
    """

    __slots__ = ("_token", "seeded", "phase", "_capability", "_exchanges", "_bytes", "complete", "_seed")

    def __init__(self, token: str, *, seeded: bool) -> None:
        self._token = token
        self.seeded = seeded
        self.phase = RecordPhase.WAITING
        self._capability: str | None = None
        self._exchanges: list[tuple[str, str, str]] = []
        self._bytes = 0
        self.complete = True
        self._seed: Any = None

    def _move(self, event: str) -> None:
        self.phase = _TRANSITIONS[(self.phase, event)]

    def open(self, token: str) -> str:
        """Open the record with ``token``; return the capability that reads it. Raises
        :class:`ProtocolError` (``VALIDATION_REFUSED``) when it cannot open (``VAL-OPEN-2``)."""
        match self.phase:
            case RecordPhase.OPEN:
                raise _refused("this session's telemetry is open already")
            case RecordPhase.PASSED:
                raise _refused("telemetry opens only before the session's first reset")
            case RecordPhase.WAITING:
                pass
        if not hmac.compare_digest(token.encode(), self._token.encode()):  # SEC-ID-1: constant time
            raise _refused("the validation token is not this server's")
        self._capability = secrets.token_urlsafe(32)
        self._move("open")
        return self._capability

    def read(self, capability: str) -> dict[str, Any]:
        """The telemetry for ``capability`` (``VAL-READ-1``); raises :class:`ProtocolError`
        (``VALIDATION_REFUSED``) when it is not this session's."""
        own = self._capability
        if own is None:
            raise _refused("this session's telemetry is not open")
        if not hmac.compare_digest(capability.encode(), own.encode()):
            raise _refused("the capability is not this session's")
        return self.telemetry()

    def episode_request(self, frame: Any) -> bool:
        """A reset or step is about to run (closes the open window, ``VAL-OPEN-1``); a reset's
        seed is the session's seed from now on (``VAL-SEED-1``). Returns whether the record
        is open (the exchange is to be recorded)."""
        self._move("episode")
        if type(frame) is Reset:
            self._seed = frame.kwargs.get("seed")
        return self.phase is RecordPhase.OPEN

    def record(self, operation: str, request: str | bytes, response: str) -> None:
        """Keep one exchange of an open record (``VAL-TRAJ-1``), within its bound (``VAL-TRAJ-2``)."""
        if not self.complete or operation not in RECORDED:
            return
        size = len(request) + len(response)
        if self._bytes + size > MAX_RECORD_BYTES:
            self.complete = False
            return
        self._bytes += size
        self._exchanges.append((operation, request if isinstance(request, str) else request.decode(), response))

    def seed_report(self) -> dict[str, Any]:
        """``{requested, accepted, value}`` of the latest reset (``VAL-SEED-1``)."""
        seed = self._seed
        requested = seed is not None
        return {"requested": requested, "accepted": requested and self.seeded, "value": seed}

    def telemetry(self) -> dict[str, Any]:
        """The ``data`` of a ``validation`` frame: fresh values, parsed from the kept texts."""
        records: list[Mapping[str, Any]] = [
            {"operation": operation, "request": parse_json(request), "response": parse_json(response)}
            for operation, request, response in self._exchanges
        ]
        return {
            "schema_version": SCHEMA_VERSION,
            "seed": self.seed_report(),
            "trajectory": {
                "schema_version": SCHEMA_VERSION,
                "source": "openenv-server",
                "records": records,
                "complete": self.complete,
            },
            "rubric": [],
            "attribution": [],
            "rubric_error": None,
        }
