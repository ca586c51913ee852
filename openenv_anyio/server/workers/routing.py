"""Owner routing: every worker accepts from the one listening socket; a connection whose
session lives in another worker is handed to that worker, socket and all.

Why this design (bench/README.md, "Multi-process serving"): the common path stays in the
worker the kernel chose, with no extra process hop and no relaying of frames: the only
added work is one ``MSG_PEEK`` read of the request head. Only two kinds of connection move:

- a resume (``OpenEnv-Resume-Token``, ``EXT-RES-1``) whose session id names another
  worker's slot and generation: it goes to that worker (or, when that worker died since,
  stays here and is answered ``SESSION_NOT_FOUND``, ``EXT-RES-4``);
- a hosted MCP session's socket (``/ws?session_id=``, ``MCP-SES-3``), whose id names another
  worker the same way: it goes to that worker (a ``POST /mcp`` naming such a session is
  forwarded there request by request: :mod:`.forwarding`);
- a new ``/ws`` session arriving, outside a burst, at a worker that holds
  :data:`BALANCE_SLACK` or more sessions than the least-loaded serving worker: it goes to
  that one, so sessions spread
  over the workers however the kernel hands out connections (a worker still starting, or
  being restarted, gets none: it would hold them unanswered).

A move sends the accepted socket's file descriptor over a Unix ``SOCK_SEQPACKET`` socket
(``SCM_RIGHTS``, one message per connection) to the target worker's inbox; the bytes peeked are still unread in the
socket, so the target serves the connection as if it had accepted it. A connection moves
at most once: the target serves what it receives without routing it again (during a burst
the session counts lag behind the connections in flight, and re-routing bounced
connections between workers more often than there were connections). The target's inbox
is a second listener beside the TCP one (:class:`InboxListener`).

A worker being replaced (a rolling restart, :meth:`OwnerRouter.retire`) stops taking
connections from its inbox (its replacement, which serves the same slot, reads that inbox
now) and hands every connection it accepts that it would have served itself to its own
slot, that is to the replacement: resumes of the sessions it hands over, new sessions and
everything else reach the new process while the old one drains. A connection whose request
head has not come when the old one stops goes to the replacement too, which waits for it
(a client that connected just then would otherwise see its connection closed during the
handshake).

The request-head parsing (:func:`~openenv_anyio.server.request_head.read_head`) and the
session-id format (:func:`session_prefix`, :func:`session_owner`) are plain functions
without I/O.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import logging
import os
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, assert_never

import trio
from hypercorn.config import Config as HypercornConfig

from ...core import ResumeToken
from ..hypercorn_adapter.accept_bursts import BURST, HeadWindow
from ..request_head import HEAD_LIMIT, Head, discard_now, read_head
from .table import WorkerTable

__all__ = [
    "BALANCE_SLACK",
    "Head",
    "InboxListener",
    "OwnerRouter",
    "Placement",
    "read_head",
    "session_owner",
    "session_prefix",
]

log = logging.getLogger("openenv_anyio.server.workers")

#: A worker hands a new session on when it holds this many more than the least-loaded one.
BALANCE_SLACK: Final = 4
#: ... but only while at most this many connections are arriving at it at once: in a burst
#: every worker takes connections from the kernel anyway, the counts lag behind the
#: connections in flight, and moving them made handshakes miss their clients' connect
#: timeouts (bench/README.md, "Multi-process serving").
BALANCE_WHILE_ARRIVING: Final = 2
#: How long a request head may take to arrive whole: Hypercorn's ``keep_alive_timeout``, the
#: bound a single process holds a slow head to (a connection without a whole head by then
#: is closed, as there).
HEAD_TIMEOUT_S: Final = float(HypercornConfig.keep_alive_timeout)
#: Most handed-over connections taken from the inbox after one wait (as from a listener).
INBOX_BURST: Final = BURST
#: How long a hand-off may wait for room in the target's inbox.
HANDOFF_TIMEOUT_S: Final = 5.0

#: a session id a worker made: its slot, its generation, then a ``/ws`` session's uuid (hex)
#: or a hosted session's secret (``secrets.token_urlsafe(32)``)
_SESSION_ID: Final = re.compile(r"(\d+)-(\d+)-(?:[0-9a-f]{32}|[A-Za-z0-9_-]{43})")

Handler = Callable[[Any], Awaitable[None]]


class _NoHead(enum.Enum):
    NO_HEAD = "no head"


#: a request head did not arrive whole in time (:meth:`OwnerRouter._peek_head`)
NO_HEAD: Final = _NoHead.NO_HEAD


def _ignore(placement: Placement) -> None:
    return None


def session_prefix(slot: int, generation: int) -> str:
    """What the session ids a worker creates start with: its slot and generation."""
    return f"{slot}-{generation}-"


def session_owner(session_id: str) -> tuple[int, int] | None:
    """The (slot, generation) that created ``session_id``, or None for another format."""
    match = _SESSION_ID.fullmatch(session_id)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


class Placement(enum.Enum):
    """Where a connection is served."""

    HERE = "here"  # this worker
    OWNER = "owner"  # the worker that owns the session it resumes
    LEAST_LOADED = "least_loaded"  # a new session, and another worker holds far fewer


async def _close_unserved(stream: trio.SocketStream) -> None:
    """Close a connection whose request head never arrived whole (in time, or before the
    server began to stop): the bytes there read first, without waiting for more."""
    discard_now(stream.socket)
    await trio.aclose_forcefully(stream)


class InboxListener(trio.abc.Listener[trio.SocketStream]):
    """Connections other workers hand to this one (their file descriptors, ``SCM_RIGHTS``).

    Like the accept bursts of ``hypercorn_adapter``, it takes every
    connection already waiting after one wait and hands them out without further
    checkpoints: taking one per pass of a busy scheduler let handed-over connections wait
    past their clients' connect timeouts during bursts (bench/README.md, "Multi-process serving").
    """

    def __init__(self, inbox: socket.socket, retired: trio.Event) -> None:
        inbox.setblocking(False)
        self._inbox = inbox
        #: once set, what arrives in the inbox is left to the slot's replacement
        self._retired = retired
        self._ready: collections.deque[trio.SocketStream] = collections.deque()
        #: streams handed out and not yet taken by the router (they are never moved again)
        self.arrived: set[trio.SocketStream] = set()

    def _drain(self) -> None:
        for _ in range(INBOX_BURST):
            try:
                _, fds, _, _ = socket.recv_fds(self._inbox, 16, 4)
            except BlockingIOError:
                return
            for extra in fds[1:]:  # one descriptor per message; anything else is closed
                os.close(extra)
            if fds:
                sock = socket.socket(fileno=fds[0])
                sock.setblocking(False)
                self._ready.append(trio.SocketStream(trio.socket.from_stdlib_socket(sock)))

    async def accept(self) -> trio.SocketStream:
        while not self._ready:
            await trio.lowlevel.wait_readable(self._inbox)
            if self._retired.is_set():
                await trio.sleep_forever()  # the replacement takes them (Hypercorn cancels this)
            self._drain()
        stream = self._ready.popleft()
        self.arrived.add(stream)
        return stream

    async def aclose(self) -> None:
        while self._ready:  # the inbox itself belongs to the worker, which closes it
            await trio.aclose_forcefully(self._ready.popleft())
        await trio.lowlevel.checkpoint()


class OwnerRouter:
    """The routing of one worker: where each accepted connection is served."""

    def __init__(
        self,
        slot: int,
        table: WorkerTable,
        inbox: socket.socket,
        peers: Sequence[socket.socket],
        *,
        head_timeout_s: float = HEAD_TIMEOUT_S,
    ) -> None:
        self.slot = slot
        self.head_timeout_s = head_timeout_s
        self.table = table
        self.inbox = inbox
        self.peers = list(peers)
        for peer in self.peers:
            peer.setblocking(False)
        self._locks = [trio.Lock() for _ in self.peers]
        self._arriving = 0  # connections between accept and placement
        self._window: HeadWindow = trio.move_on_after  # until wrap() is given the server's
        #: told of every connection handed to another worker (the server's metrics)
        self.on_hand_off: Callable[[Placement], None] = _ignore
        #: set when a replacement serves this worker's slot (see the module docstring)
        self.retired = trio.Event()

    def retire(self) -> None:
        """A replacement process serves this slot now: connections this worker would serve
        go to it (call before the worker drains)."""
        self.retired.set()

    def wrap(self, handler: Handler, listeners: list[Any], window: HeadWindow) -> tuple[Handler, list[Any]]:
        """Hypercorn's connection handler and listeners, routed (see ``accept_bursts``); a
        request head is waited for in ``window`` (ended early when the server stops)."""

        inbox = InboxListener(self.inbox, self.retired)
        self._window = window

        async def routed(stream: Any) -> None:
            if stream in inbox.arrived:  # moved here once: served here (no ping-pong)
                inbox.arrived.discard(stream)
            elif isinstance(stream, trio.SocketStream) and await self._moved(stream):
                return
            await handler(stream)

        return routed, [*listeners, inbox]

    async def _peek_head(self, stream: trio.SocketStream) -> Head | None | _NoHead:
        """The connection's request head, peeked (its bytes stay in the socket for whichever
        worker serves it); ``None`` when the peer hung up or sent no HTTP head (served here),
        :data:`NO_HEAD` when a whole one did not arrive within ``head_timeout_s`` (or before
        the server began to stop).

        Read on readiness: while the head is incomplete, the socket's receive low-water mark
        (``SO_RCVLOWAT``) is set above the bytes already peeked, so the wait ends when more
        arrive (or the peer hangs up), not at once; it is put back before the socket is served."""
        sock = stream.socket
        try:
            with self._window(self.head_timeout_s):
                while True:
                    try:
                        data = await sock.recv(HEAD_LIMIT, socket.MSG_PEEK)
                    except OSError:
                        return None
                    if not data:
                        return None
                    try:
                        head = read_head(data)
                    except ValueError:
                        return None
                    if head is not None:
                        return head
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, len(data) + 1)
                    await trio.lowlevel.wait_readable(sock)
            return NO_HEAD
        finally:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)

    def place(self, head: Head | None, *, burst: bool = False) -> tuple[Placement, int]:
        """Where a connection with this request head is served, and by which slot
        (``burst``: many connections arrive at once; new sessions then stay)."""
        if head is None or not head.websocket:
            return Placement.HERE, self.slot
        if head.resume_token is not None:
            token = ResumeToken.parse(head.resume_token)
            owner = None if token is None else self.owner_of(token.session_id)
            return (Placement.HERE, self.slot) if owner is None else (Placement.OWNER, owner)
        if head.session_id is not None:  # a hosted session's socket (MCP-SES-3): at its owner
            owner = self.owner_of(head.session_id)
            return (Placement.HERE, self.slot) if owner is None else (Placement.OWNER, owner)
        if head.path != b"/ws" or burst:
            return Placement.HERE, self.slot
        loads = self.table.serving_loads()
        mine = loads.get(self.slot)
        if mine is None:  # not marked serving (yet): nothing to compare with
            return Placement.HERE, self.slot
        lightest = min(loads, key=loads.__getitem__)
        if mine >= loads[lightest] + BALANCE_SLACK:
            return Placement.LEAST_LOADED, lightest
        return Placement.HERE, self.slot

    def owner_of(self, session_id: str) -> int | None:
        """The slot of the other worker that holds ``session_id``; None when it is this
        worker's, names no worker, or its worker was restarted since (the session is gone:
        it is answered here as unknown, ``EXT-RES-4``)."""
        owner = session_owner(session_id)
        if owner is None:
            return None
        slot, generation = owner
        if slot == self.slot or not 0 <= slot < self.table.slots or self.table.generation(slot) != generation:
            return None
        return slot

    async def _moved(self, stream: trio.SocketStream) -> bool:
        """Hand ``stream`` to another worker when it belongs there; ``True`` when it went, or
        was closed (its request head did not arrive whole in time)."""
        self._arriving += 1
        try:
            head = await self._peek_head(stream)
            if head is NO_HEAD:
                if self.retired.is_set() and await self._hand_off(stream, self.slot):
                    # a replaced worker stopping: its replacement waits for the head instead
                    self.on_hand_off(Placement.OWNER)
                    return True
                await _close_unserved(stream)  # as a single process closes it after keep_alive_timeout
                return True
            placement, slot = self.place(head, burst=self._arriving > BALANCE_WHILE_ARRIVING)
        finally:
            self._arriving -= 1
        if placement is Placement.HERE and self.retired.is_set():  # to the slot's replacement
            placement = Placement.OWNER
            slot = self.slot
        match placement:
            case Placement.HERE:
                return False
            case Placement.OWNER | Placement.LEAST_LOADED:
                if not await self._hand_off(stream, slot):
                    return False
                self.on_hand_off(placement)
                return True
            case _:
                assert_never(placement)

    async def _hand_off(self, stream: trio.SocketStream, slot: int) -> bool:
        """Send the socket to ``slot``'s inbox; ``False`` (keep it here) when that fails."""
        if not await self.send_connection(stream.socket.fileno(), slot):
            return False
        # The socket now lives in the target worker too: closing this copy sends nothing to the peer.
        stream.socket.close()
        return True

    async def send_connection(self, fd: int, slot: int) -> bool:
        """Send the connected socket ``fd`` to ``slot``'s inbox, which serves it as a
        connection it accepted; ``False`` when that fails."""
        peer = self.peers[slot]
        async with self._locks[slot]:
            with trio.move_on_after(HANDOFF_TIMEOUT_S):
                while True:
                    try:
                        socket.send_fds(peer, [b"c"], [fd])
                    except BlockingIOError:
                        await trio.lowlevel.wait_writable(peer)
                        continue
                    except OSError as exc:
                        log.warning("hand-off to worker %d failed: %s", slot, exc)
                        return False
                    return True
        log.warning("hand-off to worker %d timed out; serving the connection here", slot)
        return False

    async def open_channel(self, slot: int) -> trio.SocketStream | None:
        """A new connection to ``slot``'s worker, served there as one it accepted (never
        routed again): one end of a socket pair handed to its inbox, the stream of the
        other end returned; ``None`` when the hand-off failed."""
        ours, theirs = socket.socketpair()
        try:
            sent = await self.send_connection(theirs.fileno(), slot)
        finally:
            theirs.close()
        if not sent:
            ours.close()
            return None
        ours.setblocking(False)
        return trio.SocketStream(trio.socket.from_stdlib_socket(ours))
