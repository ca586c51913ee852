"""A session's environment kept for a store, and brought back from it.

The link between a session's environment (a :class:`~..execution.bound_env.BoundEnv`: in
this process or in one of its own) and the :class:`~.record.StoredEnv` of its session's
record, by the way the environment offers (``openenv_anyio.restoration``):

- :func:`keep_env` writes it down: ``SNAPSHOT`` calls the environment's ``snapshot()``
  where it runs and seals what it returns (a typed :class:`SnapshotError` when it raises, is
  not JSON or bytes, or is over the limit); ``REPLAY`` keeps the session's episode log;
  ``NONE`` keeps nothing.
- :func:`bring_back` makes a fresh environment that episode again: ``restore(snapshot)``,
  or the recorded reset and steps replayed with every answer checked
  (:class:`~openenv_anyio.core.replay.ReplayMismatch` at the first that differs); ``NONE``
  is :class:`RestoreFailed`.
- :func:`answer_of` is what an episode log records of an answer and what a replay compares:
  the observation frame's ``data`` as the client receives it (numpy values as JSON, a NaN
  as ``null``), so the session that records and the server that replays agree.
"""

from __future__ import annotations

import json
from typing import Any

from ...core import dumps
from ...core.replay import EpisodeLog, ReplayCheck
from ...environment import LiftedObservation
from ...restoration import MAX_SNAPSHOT_BYTES, RestoreFailed, RestoreWay
from ..execution.bound_env import BoundEnv
from .record import StoredEnv

__all__ = ["answer_of", "bring_back", "keep_env"]


def answer_of(lifted: LiftedObservation) -> Any:
    """What an episode log records of an answer: the frame's ``data`` as plain JSON."""
    return json.loads(dumps(lifted.frame_data()))


async def keep_env(
    bound: BoundEnv, way: RestoreWay, log: EpisodeLog | None, *, limit: int = MAX_SNAPSHOT_BYTES
) -> StoredEnv:
    """What brings ``bound``'s episode back, by ``way`` (see the module docstring).

    Raises :class:`SnapshotError` when the snapshot fails or is too large, and
    :class:`ValueError` for a replay without its log.
    """
    match way:
        case RestoreWay.SNAPSHOT:
            return StoredEnv(way, snapshot=await bound.snapshot(limit))
        case RestoreWay.REPLAY:
            if log is None:
                raise ValueError("a replayed session keeps its episode log: there is none (no reset yet?)")
            return StoredEnv(way, log=log)
        case RestoreWay.NONE:
            return StoredEnv(way)


async def bring_back(bound: BoundEnv, stored: StoredEnv) -> None:
    """Make ``bound`` (a fresh environment) the episode ``stored`` keeps.

    Raises :class:`RestoreFailed` (``restore`` raised, or the session cannot be brought
    back) or :class:`~openenv_anyio.core.replay.ReplayMismatch` (a replayed answer differs);
    an exception of the environment during a replay propagates as it is.
    """
    match stored.way:
        case RestoreWay.SNAPSHOT:
            assert stored.snapshot is not None
            await bound.restore(stored.snapshot)
        case RestoreWay.REPLAY:
            assert stored.log is not None
            check = ReplayCheck(stored.log)
            while (call := check.next_call()) is not None:
                if call.step is None:
                    lifted, _ = await bound.reset(call.arguments)
                else:
                    lifted = await bound.step(bound.check_action(call.action))
                check.check(answer_of(lifted))
        case RestoreWay.NONE:
            raise RestoreFailed(f"{bound.name} neither snapshots nor replays: its session cannot be brought back")
