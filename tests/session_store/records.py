"""Kept sessions the session-store tests write: one of each kind and way."""

from __future__ import annotations

from openenv_anyio.core import new_resume_token
from openenv_anyio.core.replay import EpisodeLog
from openenv_anyio.restoration import RestoreWay, seal_snapshot
from openenv_anyio.server.session_store import StoredEnv, StoredLedger, StoredSession, key_digest


def replayed_session(session_id: str = "s1", steps: int = 3) -> tuple[str, StoredSession]:
    """A resumable session of a deterministic env: ``(its resume token, its record)``."""
    token = str(new_resume_token(session_id))
    log = EpisodeLog.start({"seed": 7, "episode_id": "ep"}, {"observation": {"n": 0}, "reward": None, "done": False})
    for n in range(1, steps + 1):
        log.record_step({"add": 1}, {"observation": {"n": n}, "reward": 1.0, "done": False})
    record = StoredSession(
        kind="resumable",
        public_id=session_id,
        key_digest=key_digest(token),
        episode_id="ep",
        step_count=steps,
        ledger=StoredLedger(f"r{steps}", ("step", {"add": 1}, "ep"), '{"type":"observation","data":{}}'),
        env=StoredEnv(RestoreWay.REPLAY, log=log),
        saved_at=1_790_000_000.5,
    )
    return token, record


def snapshot_session(secret_id: str = "hosted-secret-id-0123456789abcdef", data: object = None) -> StoredSession:
    """A hosted session of a snapshotting env (its secret id is its key)."""
    snapshot = seal_snapshot({"board": [[1, 0], [0, 2]]} if data is None else data)
    return StoredSession(
        kind="hosted",
        public_id="mcp-1",
        key_digest=key_digest(secret_id),
        episode_id=None,
        step_count=0,
        ledger=StoredLedger(),
        env=StoredEnv(RestoreWay.SNAPSHOT, snapshot=snapshot),
        saved_at=1_790_000_001.0,
    )
