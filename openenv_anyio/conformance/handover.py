"""The hand-over case (``EXT-HAND-01``): a session outlives a restart of the server under test.

A server that keeps its sessions in a session store says so with ``handover`` in
``GET /metadata`` (``HTTP-2``). The kit cannot restart a server by itself: the user gives a
shell command that does (``openenv-anyio check --restart-command CMD``). The case then

1. opens a negotiated session, resets it and steps it a few times (each with a
   ``request_id``), reads its ``step_count``;
2. runs the command (bounded by ``--restart-timeout``), and reads how the session's
   connection ended: 1012 after a drain (``EXT-HAND-1``), no close frame after a crash;
3. resumes with the session's token, trying again while the server is away (refused
   connections, 1013 while it drains: ``EXT-HAND-6``), and checks the greeting (same
   ``session_id``, ``resumed: true``, ``last_request_id`` and ``episode_id`` kept), that
   ``step_count`` continued, that the last request repeated is answered from the ledger
   (the same answer, ``step_count`` unchanged: not run twice) and that one more step works
   (``EXT-HAND-2``).

A session the server says it cannot bring back (``restore: none``), or one a crash lost on
a server that is not durable (``EXT-HAND-4``), must instead be refused with
``SESSION_NOT_FOUND`` and 4404, never continued as a fresh episode (``EXT-HAND-3``).
Without the command the case says "claimed, not exercised"; against a server without
``handover``, "not offered".
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

import trio

from ..core import RESUME_TOKEN_HEADER, SUBPROTOCOL, CloseCode
from .context import CaseContext, expect_error, expect_frame, expect_state, receive_within
from .driver import DriverError, ServerClosed, WsConnection
from .evidence import Received
from .verdicts import CaseFailed, NotApplicable

__all__ = ["HANDOVER_REQUIREMENTS", "restart_hands_over"]

HANDOVER_REQUIREMENTS: Final = ("EXT-HAND-1", "EXT-HAND-2", "EXT-HAND-3", "EXT-HAND-4", "EXT-HAND-6")
EPISODE: Final = "conformance-ext-hand-01"
STEPS: Final = 3
#: the wait between two tries to resume while the server is away
RETRY_WAIT_S: Final = 0.2
#: the most of the command's output a failure quotes
OUTPUT_SHOWN: Final = 300


def _request_id(number: int) -> str:
    return f"conformance-{number}"


async def restart_hands_over(ctx: CaseContext) -> None:
    """The case's body (registered as ``EXT-HAND-01`` in ``cases``)."""
    metadata = await _metadata(ctx)
    handover = metadata.get("handover")
    if not isinstance(handover, Mapping):
        raise NotApplicable("not offered: GET /metadata has no handover (the server keeps no session store)")
    command = ctx.setup.options.restart_command
    if command is None:
        raise NotApplicable(
            "claimed, not exercised: GET /metadata says handover, but the kit cannot restart the server; "
            "give --restart-command CMD (a shell command that restarts it)"
        )
    action = ctx.require_action()
    durable = handover.get("durable") is True
    restore = metadata.get("restore", "none")
    async with _negotiated(ctx) as (old, session):
        if isinstance(session, Received):
            raise CaseFailed(f"a new negotiated connection opened with {session.describe()}, not a session frame")
        token = str(session.get("resume_token"))
        episode_id, answers = await _play(ctx, old, action)
        before = (await expect_state(old, "state before the restart")).get("step_count")
        await _restart(ctx, command)
        crashed = await _how_it_ended(ctx, old, restore)
    lost_by_design = restore == "none" or (crashed and not durable)
    deadline = trio.current_time() + ctx.setup.options.restart_timeout_s
    async with _resumed(ctx, token, deadline) as (conn, greeting):
        if lost_by_design:
            await _expect_refused(ctx, conn, greeting, restore)
            return
        _check_greeting(greeting, session, episode_id, answers[-1].value.get("request_id"))
        await _check_continued(ctx, conn, action, before, answers[-1])


async def _metadata(ctx: CaseContext) -> Mapping[str, Any]:
    reply = await ctx.http.request("GET", "/metadata")
    if reply.status != 200 or not isinstance(reply.body, Mapping):
        raise NotApplicable(f"not offered: GET /metadata answered HTTP {reply.status} without a JSON object")
    return reply.body


@contextlib.asynccontextmanager
async def _negotiated(
    ctx: CaseContext, token: str | None = None
) -> AsyncIterator[tuple[WsConnection, Mapping[str, Any] | Received]]:
    """A connection offering the extension (presenting ``token``), with its first frame: the
    session frame's ``data``, or the refusal (an error frame) when the token was refused."""
    headers = [(RESUME_TOKEN_HEADER, token)] if token is not None else []
    async with ctx.ws(subprotocols=[SUBPROTOCOL], headers=headers) as conn:
        if conn.subprotocol != SUBPROTOCOL:
            what = "selects no subprotocol" if conn.subprotocol is None else f"selected {conn.subprotocol!r}"
            raise CaseFailed(f"a server that claims handover must speak {SUBPROTOCOL}; it {what}")
        first = await conn.receive()
        if first.type == "session":
            yield conn, expect_frame(first, "session", "the first frame of a negotiated connection")
        else:
            yield conn, first


async def _play(ctx: CaseContext, conn: WsConnection, action: Mapping[str, Any]) -> tuple[str | None, list[Received]]:
    """A reset and :data:`STEPS` steps, each with a ``request_id``; the episode the reset
    started (None when the environment keeps none) and the steps' answers."""
    reset = await conn.request({"type": "reset", "request_id": _request_id(1), "data": {"episode_id": EPISODE}})
    data = expect_frame(reset, "observation", "negotiated reset")
    if data.get("done") is True:
        raise NotApplicable("the environment's episode is done at its reset: nothing to step across a restart")
    answers: list[Received] = []
    for number in range(2, 2 + STEPS):
        answer = await conn.request({"type": "step", "data": action, "request_id": _request_id(number)})
        expect_frame(answer, "observation", f"step {number - 1} before the restart")
        answers.append(answer)
        if answer.data.get("done") is True:
            ctx.note(f"the episode ended at step {number - 1}; the rest is checked from there")
            break
    episode_id = reset.value.get("episode_id")
    return (episode_id if isinstance(episode_id, str) else None), answers


async def _restart(ctx: CaseContext, command: str) -> None:
    """Run the restart command (a shell command), bounded by ``--restart-timeout``."""
    limit = ctx.setup.options.restart_timeout_s
    with trio.move_on_after(limit) as scope:
        done = await trio.run_process(
            command, shell=True, check=False, stdin=subprocess.DEVNULL, capture_stdout=True, capture_stderr=True
        )
    if scope.cancelled_caught:
        raise CaseFailed(f"the restart command did not finish within --restart-timeout {limit:g} s: {command}")
    if done.returncode != 0:
        output = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()[-OUTPUT_SHOWN:]
        raise CaseFailed(f"the restart command exited with status {done.returncode}: {command}: {output}")
    ctx.note(f"restarted the server with: {command}")


async def _how_it_ended(ctx: CaseContext, old: WsConnection, restore: Any) -> bool:
    """How the session's connection ended across the restart; True for a crash (no close
    frame). A drain that hands the session over closes it with 1012 (``EXT-HAND-1``)."""
    try:
        with trio.move_on_after(ctx.wait_s):
            await old.wait_closed()
    except DriverError:
        pass
    code = old.close_code
    if code is None or code == CloseCode.ABNORMAL:
        ctx.note("the session's connection ended without a close frame: the restart was a crash")
        return True
    if code != CloseCode.SERVICE_RESTART and restore != "none":
        raise CaseFailed(
            f"the server closed the session's connection with {code} as it restarted, "
            f"not 1012 (service restart: the session handed over, EXT-HAND-1)"
        )
    return False


@contextlib.asynccontextmanager
async def _resumed(
    ctx: CaseContext, token: str, deadline: float
) -> AsyncIterator[tuple[WsConnection, Mapping[str, Any] | Received]]:
    """The session's token presented until a server greets or refuses it: refused
    connections, closes right after the handshake (1012, 1013) and ``CAPACITY_REACHED`` are
    tried again until ``deadline`` (``EXT-HAND-6``)."""
    tries, last = 0, ""
    while True:
        tries += 1
        greeted = False
        try:
            async with _negotiated(ctx, token) as (conn, greeting):
                if isinstance(greeting, Received) and greeting.data.get("code") == "CAPACITY_REACHED":
                    last = "CAPACITY_REACHED"
                else:
                    greeted = True
                    yield conn, greeting
                    return
        except DriverError as exc:  # ServerClosed and HandshakeRejected included
            if greeted:
                raise
            last = str(exc)
        if trio.current_time() + RETRY_WAIT_S >= deadline:
            raise CaseFailed(
                f"the server did not take the session back within --restart-timeout "
                f"({tries} tries to resume; the last: {last})"
            )
        await trio.sleep(RETRY_WAIT_S)


async def _expect_refused(
    ctx: CaseContext, conn: WsConnection, greeting: Mapping[str, Any] | Received, restore: Any
) -> None:
    """A session the server cannot bring back: SESSION_NOT_FOUND then 4404 (``EXT-HAND-3``)."""
    why = "its environment says restore none" if restore == "none" else "a crash, and the server is not durable"
    if not isinstance(greeting, Received):
        raise CaseFailed(
            f"the session was taken back although it cannot be ({why}): a fresh episode in its place? {greeting}"
        )
    expect_error(greeting, "SESSION_NOT_FOUND", f"resuming a session lost to the restart ({why})")
    _, closed = await conn.wait_closed()
    if closed.code != CloseCode.SESSION_NOT_FOUND:
        raise CaseFailed(f"after SESSION_NOT_FOUND: {closed}, expected code 4404")
    ctx.note(f"the session was not handed over ({why}), and its resume was refused as EXT-HAND-3 says")


def _check_greeting(
    greeting: Mapping[str, Any] | Received, session: Mapping[str, Any], episode_id: str | None, last_id: Any
) -> None:
    """The greeting after the restart: the same session, resumed, its last request and episode kept."""
    if isinstance(greeting, Received):
        data = greeting.data if isinstance(greeting.data, Mapping) else {}
        raise CaseFailed(
            f"the server did not take the session back: {data.get('code')}: {data.get('message')!r} "
            f"({greeting.describe()})"
        )
    if greeting.get("resumed") is not True or greeting.get("session_id") != session.get("session_id"):
        raise CaseFailed(f"the session frame after the restart is not the session resumed: {greeting}")
    if greeting.get("last_request_id") != last_id:
        raise CaseFailed(
            f"the session came back with last_request_id {greeting.get('last_request_id')!r}, not {last_id!r}"
        )
    if episode_id is not None and greeting.get("episode_id") != episode_id:
        raise CaseFailed(f"the session came back with episode_id {greeting.get('episode_id')!r}, not {episode_id!r}")


async def _check_continued(
    ctx: CaseContext, conn: WsConnection, action: Mapping[str, Any], before: Any, last: Received
) -> None:
    """The episode continued: ``step_count`` kept, the last request answered from the
    ledger (not run again), one more step counted."""
    state = await expect_state(conn, "state after the restart")
    counts = isinstance(before, int) and not isinstance(before, bool)
    if not counts:
        ctx.inform(
            f"the environment does not count steps (step_count {before!r}): the answers came back, "
            "but whether a step ran twice across the restart cannot be seen"
        )
    if counts and state.get("step_count") != before:
        raise CaseFailed(f"step_count is {state.get('step_count')!r} after the restart, not {before} (not continued)")
    last_id = last.value.get("request_id")
    again = await conn.request({"type": "step", "data": action, "request_id": last_id})
    expect_frame(again, "observation", f"the last step repeated ({last_id}) after the restart")
    if again.value != last.value:
        raise CaseFailed(
            f"the last step repeated after the restart got another answer: {again.describe()} "
            f"(first: {last.describe()}): the ledger did not come back"
        )
    if counts and (await expect_state(conn, "state after the repeat")).get("step_count") != before:
        raise CaseFailed("the repeated step ran again after the restart: exactly-once did not hold (EXT-HAND-2)")
    if last.data.get("done") is True:
        ctx.note("the episode had ended before the restart: no further step is taken")
    else:
        more = await conn.request({"type": "step", "data": action, "request_id": _request_id(2 + STEPS)})
        expect_frame(more, "observation", "one more step after the restart")
        if counts and (await expect_state(conn, "state after one more step")).get("step_count") != before + 1:
            raise CaseFailed(f"one more step after the restart did not count: step_count is not {before + 1}")
    with contextlib.suppress(ServerClosed):
        await conn.send_json({"type": "close"})
        await receive_within(conn, ctx.wait_s)
