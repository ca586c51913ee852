"""Resumable sessions handed over between server processes through a session store
(``EXT-HAND-1`` .. ``EXT-HAND-5``, ``serve --session-store``).

Theory of operation. A server started with a store keeps its resumable sessions in memory
as any server does (:mod:`.kept`); the store is where a session goes when the process that
holds it stops, and where the next process finds it:

- **Handing over** (:meth:`Handover.hand_over_all`, on drain): each resumable session
  finishes the request it is executing (its answer in the ledger), is written out
  (:meth:`Handover.export`: ids, the digest of its token, episode, step count, ledger and
  what brings its environment back), and only then is its connection closed with 1012
  (``SessionEnd.HANDED_OVER``). A session that cannot be written closes 1001 as before.
- **Taking back** (:meth:`Handover.take_back`): a token this process does not know is
  looked up in the store by its digest and taken (removed in the same step: of several
  servers sharing the store, one takes it); a fresh environment is brought back to the
  episode (``restore(snapshot)``, or the recorded reset and steps replayed with every
  answer checked) and the session is readmitted, waiting for the connection that asked.
  Anything that stops it is a :class:`Refusal`: a typed error frame and close 4404, or a
  close 1013 when the store or capacity may come back; never a fresh episode.
- **Durable** (``--durable``): after each reset and step, the session's record is written
  (gathered with other sessions' into one transaction, :class:`GroupCommit`) before its
  answer leaves, so a crash loses nothing that was answered. Records of sessions that end
  are deleted; live ones are rewritten before they could look stale.
- **Expiry**: a record waits in the store at most ``resume_grace_s``, as a session waits in
  memory; :meth:`Handover.maintain` prunes older ones.

A replayed environment needs its episode's log: :meth:`Handover.note_answer` keeps one per
session (a reset starts it, each step adds its action and the digest of its answer; an
environment that raised during a step cannot be replayed any more, and is then kept as
not restorable).
"""

from __future__ import annotations

import enum
import json
import logging
import time
from dataclasses import dataclass
from typing import assert_never

import trio

from ...core import CloseCode, ErrorCode, Reset, ResumeToken, SessionOutcome, Step, token_hint
from ...core.replay import EpisodeLog, ReplayMismatch
from ...restoration import RestoreWay, SnapshotError, restore_way
from ..execution.bound_env import FactoryFailure
from ..session_store import (
    GroupCommit,
    RecordError,
    SessionStore,
    StoredEnv,
    StoredLedger,
    StoredSession,
    StoreUnavailable,
    bring_back,
    keep_env,
    key_digest,
)
from ..session_store.errors import IncompatibleRecord
from ..ui.hub import EpisodeView
from .ends import SessionEnd
from .kept import KeptRecord, KeptServer, KeptSession, KeptSessions, KeptState, LedgerRecord
from .session import Session, SessionIdentity, SessionKind

log = logging.getLogger("openenv_anyio.server")

__all__ = ["NOT_FOUND", "Handover", "HandoverPolicy", "LostCause", "Refusal"]


class LostCause(enum.Enum):
    """Why a kept session could not outlive its server (``openenv_sessions_lost_total``'s cause)."""

    NOT_RESTORABLE = "not_restorable"  # the environment neither snapshots nor replays
    SNAPSHOT_FAILED = "snapshot_failed"  # snapshot() failed or was over the limit
    RESTORE_FAILED = "restore_failed"  # restore() or a replayed call raised
    REPLAY_MISMATCH = "replay_mismatch"  # a replayed answer differed from the recorded one
    STORE_UNAVAILABLE = "store_unavailable"  # the store could not be written
    RECORD_UNREADABLE = "record_unreadable"  # a corrupt record, or one of another version
    EXPIRED = "expired"  # nobody came back for it within resume_grace_s


@dataclass(frozen=True, slots=True)
class HandoverPolicy:
    """How a server keeps its sessions in its store."""

    #: write each reset's and step's record before its answer leaves (``EXT-HAND-4``)
    durable: bool
    #: the operator says the environment is deterministic (``serve --deterministic``)
    deterministic: bool
    #: the largest snapshot kept, in bytes
    snapshot_limit: int


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a token was not taken back: an error frame (``code``, ``message``) when there is
    one, then a close with ``close_code`` and ``reason``."""

    code: ErrorCode | None
    message: str
    close_code: CloseCode
    reason: str


#: a token that names no session (``EXT-RES-4``)
NOT_FOUND = Refusal(
    ErrorCode.SESSION_NOT_FOUND,
    "No session matches the resume token (unknown, or its grace period ended)",
    CloseCode.SESSION_NOT_FOUND,
    "session not found",
)


def _lost_refusal(code: ErrorCode, why: str) -> Refusal:
    return Refusal(code, f"the session could not be brought back: {why}", CloseCode.SESSION_NOT_FOUND, "session lost")


class Handover:
    """One server's kept sessions written to and taken back from a session store (see the
    module docstring)."""

    def __init__(self, server: KeptServer, kept: KeptSessions, policy: HandoverPolicy) -> None:
        self.server = server
        self.kept = kept
        self.policy = policy
        self._store: SessionStore | None = None
        self._commit: GroupCommit | None = None
        #: bring-backs under way, by token digest (a second connection with the token waits)
        self._bringing: dict[str, trio.Event] = {}
        #: sessions whose durable write failed (logged once until one succeeds)
        self._unwritten: set[str] = set()

    @property
    def durable(self) -> bool:
        """Each reset's and step's record is written before its answer leaves (``EXT-HAND-4``)."""
        return self.policy.durable

    def attach(self, store: SessionStore, commit: GroupCommit) -> None:
        """Use ``store`` (open) and its group commit from now on (the server opens them as it
        starts serving)."""
        self._store, self._commit = store, commit

    @property
    def store(self) -> SessionStore:
        assert self._store is not None, "the session store is not open yet"
        return self._store

    @property
    def commit(self) -> GroupCommit:
        assert self._commit is not None, "the session store is not open yet"
        return self._commit

    # -- what each session keeps ---------------------------------------------------------------

    def way_of(self, kept: KeptSession) -> RestoreWay:
        """How ``kept``'s environment can be brought back (the operator's ``--deterministic``
        makes an environment with no way of its own replayable)."""
        if kept.restore_way is None:
            kept.restore_way = restore_way(kept.env.env, deterministic=True if self.policy.deterministic else None)
        return kept.restore_way

    def note_answer(self, kept: KeptSession, request: Reset | Step, text: str) -> None:
        """Keep ``kept``'s episode log for a replay: ``text`` answered ``request``. Only for
        replayed environments."""
        if self.way_of(kept) is not RestoreWay.REPLAY:
            return
        answer = json.loads(text)
        if answer.get("type") != "observation":
            if (answer.get("data") or {}).get("code") == ErrorCode.EXECUTION_ERROR.value:
                kept.episode_log = None  # the environment raised: a replay could not follow it
                kept.replayable = False
            return
        match request:
            case Reset():
                kept.episode_log = EpisodeLog.start(request.kwargs, answer["data"])
                kept.replayable = True
            case Step():
                if kept.episode_log is not None:
                    kept.episode_log.record_step(request.action, answer["data"])
            case _:
                assert_never(request)

    async def _stored(self, kept: KeptSession) -> StoredSession:
        """``kept`` as its store keeps it; its environment kept as not restorable (with the
        cause logged and counted) when it cannot be kept otherwise."""
        record = kept.record()
        way = self.way_of(kept)
        try:
            if way is RestoreWay.REPLAY and (kept.episode_log is None or not kept.replayable):
                env = StoredEnv(RestoreWay.NONE)  # no reset yet, or the environment raised
            else:
                env = await keep_env(kept.env, way, kept.episode_log, limit=self.policy.snapshot_limit)
        except SnapshotError as exc:
            self.server.instruments.session_lost(kept.session.identity, LostCause.SNAPSHOT_FAILED.value, str(exc))
            env = StoredEnv(RestoreWay.NONE)
        ledger = record.ledger
        asked = ledger.asked if isinstance(ledger.asked, tuple) else None
        return StoredSession(
            kind=record.kind.value,
            public_id=record.public_id,
            key_digest=_digest_of(kept),
            episode_id=record.episode_id,
            step_count=record.step_count,
            ledger=StoredLedger(ledger.last_request_id if asked is not None else None, asked, ledger.answer),
            env=env,
            saved_at=time.time(),
        )

    # -- writing ---------------------------------------------------------------------------------

    async def _put(self, kept: KeptSession) -> tuple[StoredSession, StoreUnavailable | None]:
        """Write ``kept``'s record through the group commit: the record, and the store's
        error when it is not in the store."""
        stored = await self._stored(kept)
        try:
            await self.commit.write(stored)
        except StoreUnavailable as exc:
            return stored, exc
        kept.written_at = trio.current_time()
        return stored, None

    async def write(self, kept: KeptSession) -> bool:
        """Write ``kept``'s record now (``--durable``: before an answer leaves); ``False``
        when the store failed (said once per session until a write succeeds)."""
        _, error = await self._put(kept)
        if error is None:
            self._unwritten.discard(kept.session_id)
            return True
        if kept.session_id not in self._unwritten:
            self._unwritten.add(kept.session_id)
            log.error("session %s: not written to the session store: %s", kept.session_id, error)
        return False

    async def export(self, kept: KeptSession) -> bool:
        """Hand ``kept`` over (drain): write it out; ``True`` when it is in the store and the
        session may end ``HANDED_OVER``."""
        instruments, identity = self.server.instruments, kept.session.identity
        stored, error = await self._put(kept)
        if error is not None:
            instruments.session_lost(identity, LostCause.STORE_UNAVAILABLE.value, str(error))
            return False
        instruments.session_exported(identity, stored.env.way.value)
        if stored.env.way is RestoreWay.NONE:
            instruments.session_lost(identity, LostCause.NOT_RESTORABLE.value, "its environment cannot be brought back")
        kept.closing_outcome = SessionOutcome.HANDED_OVER
        return True

    async def before_close(self, kept: KeptSession, end: SessionEnd) -> SessionEnd:
        """A connection of ``kept`` is about to close with ``end``: a hand-over writes the
        session first, and closes 1001 instead when it could not (``EXT-HAND-1``)."""
        if end is not SessionEnd.HANDED_OVER:
            return end
        return end if await self.export(kept) else SessionEnd.SHUTDOWN

    async def forget(self, kept: KeptSession) -> None:
        """``kept`` ended for good (not handed over): its durable record goes too."""
        if not self.durable or kept.closing_outcome is SessionOutcome.HANDED_OVER:
            return
        self._unwritten.discard(kept.session_id)
        try:
            await self.store.delete([_digest_of(kept)])
        except StoreUnavailable as exc:  # it expires from the store later
            log.warning("session %s: its record stays in the session store until it expires: %s", kept.session_id, exc)

    async def hand_over_all(self) -> None:
        """Drain: every resumable session is handed over (held ones after the request they
        are executing); hosted sessions are left to :meth:`KeptSessions.end_all`."""
        self.kept.closed = True
        async with trio.open_nursery() as nursery:
            for kept in self.kept:
                if kept.kind is not SessionKind.RESUMABLE:
                    continue
                if kept.state is KeptState.HELD:
                    await self.kept.close(kept, SessionOutcome.SHUTDOWN, end=SessionEnd.HANDED_OVER)
                elif kept.state is KeptState.WAITING:
                    nursery.start_soon(self._hand_over_waiting, kept)

    async def _hand_over_waiting(self, kept: KeptSession) -> None:
        exported = await self.export(kept)
        if kept.state is KeptState.WAITING:
            await self.kept.close(kept, SessionOutcome.HANDED_OVER if exported else SessionOutcome.SHUTDOWN)

    # -- taking back -------------------------------------------------------------------------------

    async def take_back(self, presented: str, peer: str | None) -> KeptSession | Refusal:
        """The session ``presented`` (a token this process does not know) names, taken from
        the store and brought back, waiting for the connection that presented it; or why not."""
        token = ResumeToken.parse(presented)
        if token is None:
            return NOT_FOUND
        if self.kept.closed:
            return Refusal(None, "", CloseCode.TRY_AGAIN_LATER, "server draining")
        digest = key_digest(presented)
        while (busy := self._bringing.get(digest)) is not None:  # another connection brings it back
            await busy.wait()
            found = self.kept.find_resumable(presented)
            if found is not None:
                return found
        done = self._bringing[digest] = trio.Event()
        try:
            return await self._take_back(token, presented, digest, peer)
        finally:
            del self._bringing[digest]
            done.set()

    async def _take_back(
        self, token: ResumeToken, presented: str, digest: str, peer: str | None
    ) -> KeptSession | Refusal:
        server = self.server
        instruments = server.instruments
        slot = server.registry.try_reserve()
        if slot is None:
            return Refusal(None, "", CloseCode.TRY_AGAIN_LATER, "server at capacity")
        try:
            stored = await self.store.take(digest)
        except StoreUnavailable as exc:
            slot.release()
            log.error("resume of %s: the session store is unavailable: %s", token_hint(presented), exc)
            return Refusal(None, "", CloseCode.TRY_AGAIN_LATER, "session store unavailable")
        except RecordError as exc:
            slot.release()
            instruments.session_lost(None, LostCause.RECORD_UNREADABLE.value, str(exc), session_id=token.session_id)
            kind = "of another version" if isinstance(exc, IncompatibleRecord) else "unreadable"
            return _lost_refusal(ErrorCode.SESSION_NOT_FOUND, f"its record is {kind}")
        if stored is None or stored.kind != SessionKind.RESUMABLE.value or stored.public_id != token.session_id:
            slot.release()
            return NOT_FOUND
        if stored.saved_at + server.config.resume_grace_s < time.time():
            slot.release()
            instruments.session_lost(
                None, LostCause.EXPIRED.value, "kept longer than resume_grace_s", session_id=token.session_id
            )
            return NOT_FOUND
        identity = SessionIdentity(stored.public_id, peer, EpisodeView(stored.public_id, server.config.action_log_size))
        try:
            session = await Session.open(server, SessionKind.RESUMABLE, identity, slot)
        except FactoryFailure as exc:
            slot.release()
            await self._put_back(stored)
            log.error("resume of %s: the environment could not be created: %s", token_hint(presented), exc)
            return Refusal(None, "", CloseCode.TRY_AGAIN_LATER, "environment could not be created")
        refusal = await self._bring_env_back(session, stored)
        if refusal is not None:
            await session.end(SessionOutcome.CLOSED)
            return refusal
        session.view.brought_back = stored.env.way.value  # the dashboard shows it came back
        kept = self.kept.readmit(_kept_record(stored, presented), session)
        kept.restore_way = stored.env.way
        if stored.env.log is not None:
            kept.episode_log = stored.env.log
            kept.replayable = True
        instruments.session_imported(session.identity, stored.env.way.value, stored.step_count)
        if self.durable:  # taking removed it: in the store again before the client hears of it
            await self.write(kept)
        return kept

    async def _bring_env_back(self, session: Session, stored: StoredSession) -> Refusal | None:
        """Bring ``session``'s fresh environment back to ``stored``'s episode; why not."""
        instruments = self.server.instruments
        try:
            await bring_back(session.env, stored.env)
        except ReplayMismatch as exc:
            instruments.session_lost(session.identity, LostCause.REPLAY_MISMATCH.value, str(exc))
            return Refusal(ErrorCode.REPLAY_MISMATCH, str(exc), CloseCode.SESSION_NOT_FOUND, "replay mismatch")
        except SnapshotError as exc:  # RestoreFailed: restore() raised, or no way to bring it back
            if stored.env.way is not RestoreWay.NONE:  # not restorable: counted when it was handed over
                instruments.session_lost(session.identity, LostCause.RESTORE_FAILED.value, str(exc))
            return _lost_refusal(ErrorCode.SESSION_NOT_FOUND, str(exc))
        except Exception as exc:  # the environment raised while replaying
            instruments.session_lost(
                session.identity, LostCause.RESTORE_FAILED.value, f"replaying raised {type(exc).__name__}"
            )
            return _lost_refusal(ErrorCode.SESSION_NOT_FOUND, f"replaying its episode raised {type(exc).__name__}")
        return None

    async def _put_back(self, stored: StoredSession) -> None:
        try:
            await self.store.put([stored])
        except StoreUnavailable as exc:
            self.server.instruments.session_lost(
                None, LostCause.STORE_UNAVAILABLE.value, str(exc), session_id=stored.public_id
            )

    # -- upkeep ----------------------------------------------------------------------------------

    async def maintain(self) -> None:
        """Prune records nobody came back for within ``resume_grace_s``; under ``--durable``,
        rewrite the records of live sessions before they could be pruned (runs until cancelled)."""
        grace = self.server.config.resume_grace_s
        period = min(max(grace / 3, 0.5), 60.0)
        while True:
            await trio.sleep(period)
            if self.durable:
                stale = trio.current_time() - period
                for kept in self.kept:
                    if kept.kind is SessionKind.RESUMABLE and kept.held and kept.written_at < stale and not kept.ended:
                        await self.write(kept)
            try:
                pruned = await self.store.prune(time.time() - grace)
            except StoreUnavailable as exc:
                log.warning("the session store could not be pruned: %s", exc)
                continue
            for _ in range(pruned):
                self.server.instruments.session_lost(None, LostCause.EXPIRED.value, "kept longer than resume_grace_s")


def _digest_of(kept: KeptSession) -> str:
    """The digest of ``kept``'s key, made once."""
    if kept.key_digest is None:
        kept.key_digest = key_digest(kept.key)
    return kept.key_digest


def _kept_record(stored: StoredSession, key: str) -> KeptRecord:
    ledger = stored.ledger
    return KeptRecord(
        SessionKind(stored.kind),
        stored.public_id,
        key,
        stored.episode_id,
        stored.step_count,
        LedgerRecord(ledger.last_request_id, ledger.asked, ledger.answer),
    )
