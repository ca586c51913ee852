"""The resume extension's session logic, sans-IO: negotiation names, resume tokens, and the
ledger that makes ``reset`` and ``step`` exactly-once (PROTOCOL.md section 10, ``EXT-*``).

A resume token is ``<session_id>.<secret>``: the public session id finds the session, the
secret (``secrets.token_urlsafe(32)``, 256 random bits) proves the right to it and is
compared in constant time. Logs show :func:`token_hint`, never the secret.
"""

from __future__ import annotations

import enum
import hmac
import secrets
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = [
    "RESUME_TOKEN_HEADER",
    "SUBPROTOCOL",
    "Decision",
    "RequestLedger",
    "ResumeToken",
    "new_resume_token",
    "token_hint",
]

#: The WebSocket subprotocol that switches the extensions on (``EXT-NEG-1``).
SUBPROTOCOL: Final = "openenv-anyio.v1"
#: The opening-handshake request header that presents a resume token (``EXT-RES-1``).
RESUME_TOKEN_HEADER: Final = "OpenEnv-Resume-Token"

_SECRET_BYTES: Final = 32


@dataclass(frozen=True, slots=True)
class ResumeToken:
    """A parsed token: the session it names and the secret that proves the right to it."""

    session_id: str
    secret: str

    @classmethod
    def parse(cls, text: str) -> ResumeToken | None:
        """The token in ``text``, or None when it is not shaped like one."""
        session_id, dot, secret = text.partition(".")
        if not dot or not session_id or len(secret) < 22:
            return None
        return cls(session_id, secret)

    def matches(self, secret: str) -> bool:
        """Whether ``secret`` is this token's secret (constant time)."""
        return hmac.compare_digest(self.secret.encode(), secret.encode())

    def __str__(self) -> str:
        return f"{self.session_id}.{self.secret}"

    def __repr__(self) -> str:
        return f"ResumeToken({self.session_id!r}, secret=...)"


def new_resume_token(session_id: str) -> ResumeToken:
    """A fresh token for ``session_id`` (``secrets``: 256 bits, ``EXT-SES-2``)."""
    if "." in session_id:
        raise ValueError("a session id must not contain '.'")
    return ResumeToken(session_id, secrets.token_urlsafe(_SECRET_BYTES))


def token_hint(token: str) -> str:
    """What a log may show of a token: its session id, never the secret."""
    session_id, _, _ = token.partition(".")
    return f"{session_id[:32]}.***"


class Decision(enum.Enum):
    """What to do with a request that carries a ``request_id`` (``EXT-REQ-1``)."""

    RUN = "run"  # a new request: execute it
    REPLAY = "replay"  # the last request again, answered: send the stored answer
    WAIT = "wait"  # the last request again, still executing: wait for its answer
    CONFLICT = "conflict"  # the last request_id with another request: refuse it (EXT-REQ-3)


Answer = TypeVar("Answer")


class RequestLedger(Generic[Answer]):
    """The last request of one session and its answer.

    The connection that serves a request calls :meth:`decide`, then for ``RUN``
    :meth:`begin` before executing and :meth:`complete` with the answer before sending it
    (so an answer lost with its connection is still there for the repeat).

    ``request`` is what the request asks (any value comparable with ``==``, e.g. its type
    and data): a repeat of the last ``request_id`` asking something else is a
    ``CONFLICT``, as with idempotency keys, never a replay of the other answer. It is
    compared only when a ``request_id`` repeats.
    """

    __slots__ = ("last_request_id", "_request", "_answer", "_in_flight")

    def __init__(self) -> None:
        self.last_request_id: str | None = None
        self._request: object = None
        self._answer: Answer | None = None
        self._in_flight = False

    def decide(self, request_id: str, request: object = None) -> Decision:
        if request_id != self.last_request_id:
            return Decision.RUN
        try:
            same = request == self._request
        except RecursionError:  # nested too deeply to compare: not the same request
            same = False
        if not same:
            return Decision.CONFLICT
        return Decision.WAIT if self._in_flight else Decision.REPLAY

    def begin(self, request_id: str, request: object = None) -> None:
        self.last_request_id = request_id
        self._request = request
        self._answer = None
        self._in_flight = True

    def complete(self, request_id: str, answer: Answer) -> None:
        if request_id != self.last_request_id:
            raise ValueError(f"complete({request_id!r}) but the request in flight is {self.last_request_id!r}")
        self._answer = answer
        self._in_flight = False

    @property
    def in_flight(self) -> bool:
        return self._in_flight

    @property
    def asked(self) -> object:
        """What the last request asked (as given to :meth:`begin`)."""
        return self._request

    def stored_answer(self) -> Answer:
        """The answer to :attr:`last_request_id` (only after :meth:`complete`)."""
        if self._in_flight or self._answer is None:
            raise LookupError("no stored answer")
        return self._answer
