"""The one store of sessions that outlive a connection (``server.sessions.kept``): resumable and
hosted sessions side by side, one holder at a time, and a kept session's record written out
and read back without its connections."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from openenv_anyio.core import SessionOutcome
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import ServerConfig
from openenv_anyio.server.context import ServerContext
from openenv_anyio.server.sessions.ends import SessionEnd
from openenv_anyio.server.sessions.kept import KeptSessions, KeptState
from openenv_anyio.server.sessions.session import Session, SessionIdentity, SessionKind
from openenv_anyio.server.ui.hub import EpisodeView

pytestmark = pytest.mark.trio


class Holding:
    """A connection holding a session, as the store sees one."""

    def __init__(self) -> None:
        self.released = trio.Event()
        self.asked: list[SessionEnd] = []

    def let_go(self, end: SessionEnd) -> None:
        self.asked.append(end)


async def _resumable(ctx: ServerContext, store: KeptSessions) -> tuple[Session, Holding]:
    slot = ctx.registry.try_reserve()
    identity = Session.new_identity(ctx, None)
    session = await Session.open(ctx, SessionKind.RESUMABLE, identity, slot)
    kept = store.keep_resumable(session)
    holding = Holding()
    store.hold_first(kept, holding)
    return session, holding


async def test_a_kept_sessions_record_is_written_out_and_read_back() -> None:
    ctx = ServerContext(EchoEnv, ServerConfig())
    store = KeptSessions(ctx)
    session, _ = await _resumable(ctx, store)
    (kept,) = store
    kept.view.record_reset("ep-1", 0, {"echo": ""})
    kept.view.record_step({"message": "hi"}, {"echo": "hi"}, 0.0, False, log=False)
    kept.ledger.begin("s1", ("step", {"message": "hi"}, "ep-1"))
    kept.ledger.complete("s1", '{"type":"observation"}')
    hosted_slot = ctx.registry.try_reserve()
    assert hosted_slot is not None
    await store.open_hosted(hosted_slot)
    records = store.records()
    assert [record.kind for record in records] == [SessionKind.RESUMABLE, SessionKind.HOSTED]
    (record, hosted_record) = records
    assert record.public_id == session.session_id and record.episode_id == "ep-1" and record.step_count == 1
    assert record.ledger.last_request_id == "s1" and record.ledger.answer == '{"type":"observation"}'
    assert hosted_record.key != hosted_record.public_id  # the secret id, never shown

    # read back into new sessions of a new store (as after a restart): the same records, found
    # by the same token and secret id
    restarted = ServerContext(EchoEnv, ServerConfig())
    again = KeptSessions(restarted)
    for each in records:
        identity = SessionIdentity(each.public_id, None, EpisodeView(each.public_id, 10))
        again.readmit(each, await Session.open(restarted, each.kind, identity, restarted.registry.try_reserve()))
    assert again.records() == records
    resumed = again.find_resumable(record.key)
    assert resumed is not None and (resumed.view.episode_id, resumed.view.step_count) == ("ep-1", 1)
    assert again.find_hosted(hosted_record.key) is not None
    forged = record.key[:-1] + ("y" if record.key.endswith("x") else "x")
    assert again.find_resumable(forged) is None
    await store.end_all()
    await again.end_all()
    assert len(again) == 0 and restarted.registry.sessions == 0


async def test_taking_a_session_over_and_shutting_its_holder_down_are_one_act() -> None:
    ctx = ServerContext(EchoEnv, ServerConfig())
    store = KeptSessions(ctx)
    _, first = await _resumable(ctx, store)
    (kept,) = store
    second = Holding()
    async with trio.open_nursery() as nursery:
        taken: list[bool] = []

        async def take() -> None:
            taken.append(await store.take(kept, second))

        nursery.start_soon(take)
        await trio.testing.wait_all_tasks_blocked()
        assert first.asked == [SessionEnd.TAKEOVER] and not taken  # the first lets go before the second holds
        await store.release(kept, first, SessionEnd.TAKEOVER, 4409)
    assert taken == [True] and kept.state is KeptState.HELD and kept.holder is second
    assert await store.close(kept, SessionOutcome.SHUTDOWN) is False  # asked to let go: it ends then
    assert second.asked == [SessionEnd.SHUTDOWN] and kept.state is KeptState.CLOSING
    assert await store.release(kept, second, SessionEnd.SHUTDOWN, 1001) is KeptState.ENDED
    assert kept.session.outcome is SessionOutcome.SHUTDOWN and len(store) == 0


async def test_a_dropped_session_waits_and_the_reaper_ends_it_expired() -> None:
    ctx = ServerContext(EchoEnv, ServerConfig(resume_grace_s=0.05))
    store = KeptSessions(ctx)
    _, holding = await _resumable(ctx, store)
    (kept,) = store
    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.reap)
        assert await store.release(kept, holding, SessionEnd.DISCONNECT, 1006) is KeptState.WAITING
        assert kept.view.dropped
        while not kept.ended:
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert kept.session.outcome is SessionOutcome.EXPIRED and ctx.registry.sessions == 0
