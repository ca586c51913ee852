"""Sessions that outlive a connection, in one store: resumable ones (a negotiated ``/ws``
session, found by its resume token, ``EXT-RES-1``) and hosted ones (created over
``POST /mcp``, found by their secret id, ``MCP-SES-1``).

Theory of operation. A :class:`KeptSession` is a :class:`~.session.Session` (environment,
slot, dashboard view) that one connection at a time may hold (a resumable session's
connection, a hosted session's attached socket). :meth:`KeptSessions.take` is the one way
its holder changes, whoever asks: a connection taking it over (``EXT-RES-5``), a close
while a socket is attached (``MCP-SES-4``), shutdown: the earlier holder is told to let go
(:meth:`Holder.let_go`: it ends after the request it is executing, whose answer is stored
in the ledger first) and is waited for, so the environment never runs two requests at
once. When its connection ends, the holder reports it (:meth:`KeptSessions.release`): the
session waits for a new one (a resumable session whose link was lost, ``EXT-RES-2``; a
hosted session whose socket closed), or ends. While nobody holds it, the session waits at
most its ``expires_after`` (``resume_grace_s``; a hosted session's idle timeout,
``MCP-SES-5``): one reaper task (:meth:`KeptSessions.reap`) ends those whose wait is over.
Ending one is :meth:`~.session.Session.end` with its outcome, as for every session.

States and transitions (anything else is a bug and raises)::

    WAITING  --hold-->     HELD       (a new holder; the earlier one, if any, lets go first)
    HELD     --hold-->     HELD
    HELD     --release-->  WAITING    (a lost link, a detached socket; a takeover keeps HELD)
    HELD     --close-->    CLOSING    (the holder is asked to let go; ends on its release)
    CLOSING  --release-->  ENDED
    WAITING  --close-->    ENDED      (closed, expired, shutdown)

A kept session's :class:`KeptRecord` (its ids, token, episode, step count and request ledger;
its environment aside) is what a session store that outlives the process writes out and
reads back (:mod:`.handover`, the :class:`Keeper` of a server started with one):
:meth:`KeptSession.record` and :meth:`KeptSession.restore` need nothing of the connections.
"""

from __future__ import annotations

import enum
import hashlib
import math
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol

import trio

from ...core import RequestLedger, ResumeToken, SessionOutcome, new_resume_token
from ...core.replay import EpisodeLog
from ...restoration import RestoreWay
from ..execution.bound_env import BoundEnv
from ..session_registry import Slot
from ..ui.hub import EpisodeView
from .ends import SessionEnd
from .session import Session, SessionKind, SessionServer

__all__ = [
    "Holder",
    "Keeper",
    "KeptRecord",
    "KeptServer",
    "KeptSession",
    "KeptSessions",
    "KeptState",
    "LedgerRecord",
]

#: Random bytes in a hosted session's id (256 bits; the id grants the session).
HOSTED_ID_BYTES: Final = 32


class KeptState(enum.Enum):
    WAITING = "waiting"
    HELD = "held"
    CLOSING = "closing"
    ENDED = "ended"


_TRANSITIONS: Final[dict[tuple[KeptState, str], KeptState]] = {
    (KeptState.WAITING, "hold"): KeptState.HELD,
    (KeptState.HELD, "hold"): KeptState.HELD,
    (KeptState.HELD, "release"): KeptState.WAITING,
    (KeptState.HELD, "close"): KeptState.CLOSING,
    (KeptState.CLOSING, "release"): KeptState.ENDED,
    (KeptState.WAITING, "close"): KeptState.ENDED,
}


class Holder(Protocol):
    """The connection holding a kept session now (one at a time)."""

    @property
    def released(self) -> trio.Event:
        """Set once the connection has let go of the session."""
        ...

    def let_go(self, end: SessionEnd) -> None:
        """End with ``end`` (``TAKEOVER``, ``SHUTDOWN``) after the request being executed."""
        ...


class Keeper(Protocol):
    """Where kept sessions go when the process stops (``.handover``, with a session store)."""

    async def before_close(self, kept: KeptSession, end: SessionEnd) -> SessionEnd:
        """A connection of ``kept`` closes with ``end``: what to close with after keeping it."""
        ...

    async def forget(self, kept: KeptSession) -> None:
        """``kept`` ended for good: nothing of it is to be kept any more."""
        ...


class KeptServer(SessionServer, Protocol):
    """What the kept sessions use of their server: a session's life, and the prefix that
    names this worker in hosted sessions' ids (``workers.routing``)."""

    @property
    def session_prefix(self) -> str: ...


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """A resumable session's last request and its answer (``EXT-REQ-1``)."""

    last_request_id: str | None
    asked: object
    answer: str | None


@dataclass(frozen=True, slots=True)
class KeptRecord:
    """What a kept session is without its environment and connections: written out and read
    back by a session store (:mod:`.handover`)."""

    kind: SessionKind
    #: the id dashboards and logs see
    public_id: str
    #: what finds it: a resumable session's resume token, a hosted session's secret id
    key: str
    episode_id: str | None
    step_count: int
    ledger: LedgerRecord


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class KeptSession:
    """One session that outlives its connections (see the module doc)."""

    def __init__(self, session: Session, key: str, expires_after: float | None) -> None:
        self.session = session
        #: the session's dashboard view (read on every step of a resumable session: kept at hand)
        self.view: EpisodeView = session.view
        #: a resumable session's resume token, a hosted session's secret id
        self.key = key
        #: how long it waits with nobody holding it (``None``: until closed or shutdown)
        self.expires_after = expires_after
        self.state = KeptState.HELD if session.kind is SessionKind.RESUMABLE else KeptState.WAITING
        self.holder: Holder | None = None
        #: since when nobody holds it (or a hosted session's last use)
        self.idle_since = trio.current_time()
        #: how it ends once its holder lets go (a close asked while one held it)
        self.closing_outcome = SessionOutcome.CLOSED
        self.ledger: RequestLedger[str] = RequestLedger()
        self.answered = trio.Event()
        # -- kept for a session store (``.handover``) --
        #: how its environment can be brought back (found when first needed)
        self.restore_way: RestoreWay | None = None
        #: its episode so far, for a replay (a replayed environment's)
        self.episode_log: EpisodeLog | None = None
        #: the episode log can be replayed (no reset yet, or the environment raised: not)
        self.replayable = False
        #: when its record was last written (``trio.current_time()``)
        self.written_at = -math.inf
        #: the digest of its key a store finds its record by (made when first written)
        self.key_digest: str | None = None

    @property
    def kind(self) -> SessionKind:
        return self.session.kind

    @property
    def session_id(self) -> str:
        """The id its connections and logs name (a hosted session's public id)."""
        return self.session.session_id

    @property
    def env(self) -> BoundEnv:
        return self.session.env

    @property
    def slot(self) -> Slot | None:
        """Held until the session ends, not just its connection (``EXT-RES-3``, ``MCP-SES-4``)."""
        return self.session.slot

    @property
    def ended(self) -> bool:
        return self.state is KeptState.ENDED

    @property
    def held(self) -> bool:
        """A connection holds it (``MCP-SES-3``: a hosted session takes one socket at a time)."""
        return self.state is not KeptState.WAITING

    def touch(self) -> None:
        """A hosted session was used (its idle timeout starts again)."""
        self.idle_since = trio.current_time()

    def answer_stored(self) -> None:
        """A request's answer is in the ledger: a takeover waiting for it may go on."""
        self.answered.set()
        self.answered = trio.Event()

    def _move(self, event: str) -> KeptState:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise RuntimeError(f"session {self.session_id}: {event!r} in state {self.state.value}") from None
        return self.state

    def record(self) -> KeptRecord:
        """What it is without its environment (a request in flight is recorded as not run)."""
        ledger = self.ledger
        answer = None if ledger.in_flight or ledger.last_request_id is None else ledger.stored_answer()
        asked = ledger.asked if answer is not None else None
        return KeptRecord(
            self.kind,
            self.session_id,
            self.key,
            self.view.episode_id,
            self.view.step_count,
            LedgerRecord(ledger.last_request_id if answer is not None else None, asked, answer),
        )

    def restore(self, record: KeptRecord) -> None:
        """Take ``record``'s episode, step count and ledger (a session read back)."""
        self.view.episode_id = record.episode_id
        self.view.step_count = record.step_count
        kept = record.ledger
        if kept.last_request_id is not None and kept.answer is not None:
            self.ledger.begin(kept.last_request_id, kept.asked)
            self.ledger.complete(kept.last_request_id, kept.answer)


class KeptSessions:
    """The sessions of one server that outlive their connections (see the module doc)."""

    def __init__(self, server: KeptServer) -> None:
        self._server = server
        self._resumable: dict[str, KeptSession] = {}  # by session id (the token's secret checked)
        self._hosted: dict[bytes, KeptSession] = {}  # by the digest of the secret id
        self._changed = trio.Event()
        #: shutdown has begun: no new sessions (set by :meth:`end_all`)
        self.closed = False
        #: where sessions go when the process stops (``None``: they end with it)
        self.keeper: Keeper | None = None

    def __len__(self) -> int:
        return len(self._resumable) + len(self._hosted)

    def __iter__(self) -> Iterator[KeptSession]:
        yield from list(self._resumable.values())
        yield from list(self._hosted.values())

    # -- opening and finding -----------------------------------------------------------------

    def keep_resumable(self, session: Session) -> KeptSession:
        """Keep a new resumable session, held by the connection that opened it (which
        :meth:`hold_first` names once it exists)."""
        kept = KeptSession(session, str(new_resume_token(session.session_id)), self._server.config.resume_grace_s)
        self._resumable[session.session_id] = kept
        return kept

    @staticmethod
    def hold_first(kept: KeptSession, holder: Holder) -> None:
        """``holder`` is the connection that opened ``kept`` (nobody held it before)."""
        assert kept.holder is None and kept.state is KeptState.HELD
        kept.holder = holder

    async def open_hosted(self, slot: Slot) -> KeptSession:
        """A new hosted session holding ``slot`` (released when it ends).

        Raises :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` (the slot is still the caller's).
        """
        server = self._server
        config = server.config
        identity = Session.new_identity(server, None)  # its public id, as dashboards and logs name it
        session = await Session.open(server, SessionKind.HOSTED, identity, slot)
        secret = server.session_prefix + secrets.token_urlsafe(HOSTED_ID_BYTES)  # the prefix names this worker
        idle = config.session_timeout_s if config.session_timeout_s is not None else config.hosted_session_idle_s
        kept = KeptSession(session, secret, idle)
        self._hosted[_digest(secret)] = kept
        self._wake()
        return kept

    def readmit(self, record: KeptRecord, session: Session) -> KeptSession:
        """Keep ``session`` (opened anew under ``record``'s public id and kind) as the session
        ``record`` describes: found by the same token or secret id, in the same episode, with
        the same ledger; waiting for a connection (a session read back from a
        :mod:`.handover`)."""
        if session.kind is not record.kind or session.session_id != record.public_id:
            raise ValueError(f"session {session.session_id} ({session.kind.value}) is not the one the record describes")
        config = self._server.config
        if record.kind is SessionKind.RESUMABLE:
            kept = KeptSession(session, record.key, config.resume_grace_s)
            self._resumable[session.session_id] = kept
        else:
            idle = config.session_timeout_s if config.session_timeout_s is not None else config.hosted_session_idle_s
            kept = KeptSession(session, record.key, idle)
            self._hosted[_digest(record.key)] = kept
        kept.state = KeptState.WAITING
        kept.restore(record)
        self._wake()
        return kept

    def find_resumable(self, presented: str) -> KeptSession | None:
        """The live resumable session the resume token ``presented`` names, or None
        (unknown, malformed, wrong secret, ending)."""
        token = ResumeToken.parse(presented)
        if token is None:
            return None
        kept = self._resumable.get(token.session_id)
        if kept is None or kept.state is KeptState.ENDED or kept.state is KeptState.CLOSING:
            return None
        known = ResumeToken.parse(kept.key)
        return kept if known is not None and known.matches(token.secret) else None

    def find_hosted(self, session_id: str) -> KeptSession | None:
        """The live hosted session ``session_id`` names, else None."""
        kept = self._hosted.get(_digest(session_id))
        return kept if kept is not None and kept.state is not KeptState.ENDED else None

    # -- who holds it --------------------------------------------------------------------------

    async def take(self, kept: KeptSession, holder: Holder) -> bool:
        """Make ``holder`` the session's holder; the earlier one lets go first (``EXT-RES-5``).
        ``False`` when the session ended meanwhile, or a later connection took it."""
        kept._move("hold")
        previous, kept.holder = kept.holder, holder
        if previous is not None:
            previous.let_go(SessionEnd.TAKEOVER)
            await previous.released.wait()
        return not kept.ended and kept.holder is holder

    async def release(self, kept: KeptSession, holder: Holder, last: SessionEnd, close_code: int) -> KeptState:
        """``holder``'s connection ended with ``last``: the session waits for the next one (a
        resumable session's lost link, any end of a hosted session's socket) or ends; its
        state then (``HELD`` when another connection holds it now)."""
        try:
            if kept.holder is not holder:  # taken over, or it never held it: the session is not its own
                return kept.state
            kept.holder = None
            if kept.state is KeptState.CLOSING:
                kept._move("release")
                await self._end(kept, kept.closing_outcome, last, close_code)
                return kept.state
            waits = kept.kind is SessionKind.HOSTED or last.rule.resumable  # EXT-RES-2, MCP-SES-4
            if not waits or self.closed:
                kept._move("close")  # HELD -> CLOSING; ended below
                kept._move("release")
                await self._end(kept, kept.session.closing_outcome(), last, close_code)
                return kept.state
            kept._move("release")
            kept.idle_since = trio.current_time()
            if kept.kind is SessionKind.RESUMABLE:
                kept.view.set_status(dropped=True)  # UI-7
                self._server.hub.publish_status(kept.view)
            self._wake()
            return kept.state
        finally:
            holder.released.set()

    def resumed(self, kept: KeptSession) -> None:
        """A resumable session is held again: dashboards no longer show it dropped."""
        if kept.view.dropped:
            kept.view.set_status(dropped=False)
            self._server.hub.publish_status(kept.view)

    # -- ending ------------------------------------------------------------------------------

    async def close(
        self,
        kept: KeptSession,
        outcome: SessionOutcome = SessionOutcome.CLOSED,
        *,
        end: SessionEnd = SessionEnd.SHUTDOWN,
    ) -> bool:
        """End the session with ``outcome``: ``True`` when ended now, ``False`` when its
        holder was asked to let go (its connection ending with ``end``) and it ends then."""
        if kept._move("close") is KeptState.ENDED:
            await self._end(kept, outcome)
            return True
        kept.closing_outcome = outcome
        assert kept.holder is not None
        kept.holder.let_go(end)
        return False

    async def _end(
        self, kept: KeptSession, outcome: SessionOutcome, last: SessionEnd | None = None, close_code: int | None = None
    ) -> None:
        kept.state = KeptState.ENDED
        if kept.kind is SessionKind.HOSTED:
            self._hosted.pop(_digest(kept.key), None)
        elif self._resumable.get(kept.session_id) is kept:
            del self._resumable[kept.session_id]
        try:
            await kept.session.end(outcome, last=last, close_code=close_code)
        finally:
            if self.keeper is not None and kept.kind is SessionKind.RESUMABLE:
                await self.keeper.forget(kept)

    async def end_all(self) -> None:
        """Shutdown: no new sessions; those nobody holds end now, the others when their
        holder has let go (``WS-SHUT-1``, ``MCP-SES-5``)."""
        self.closed = True
        for kept in self:
            if kept.state is KeptState.WAITING or kept.state is KeptState.HELD:
                await self.close(kept, SessionOutcome.SHUTDOWN)

    async def reap(self) -> None:
        """End the sessions nobody has held for their ``expires_after`` (runs until cancelled)."""
        while True:
            now = trio.current_time()
            next_due = math.inf
            for kept in self:
                if kept.state is not KeptState.WAITING or kept.expires_after is None:
                    continue
                due = kept.idle_since + kept.expires_after
                if due <= now:
                    await self.close(kept, SessionOutcome.EXPIRED)
                else:
                    next_due = min(next_due, due)
            changed = self._changed
            with trio.move_on_at(next_due):
                await changed.wait()

    def _wake(self) -> None:
        """A session began to wait: the reaper looks again."""
        self._changed.set()
        self._changed = trio.Event()

    # -- records -----------------------------------------------------------------------------

    def records(self) -> list[KeptRecord]:
        """Every live kept session's record (for a :mod:`.handover`)."""
        return [kept.record() for kept in self if not kept.ended]
