"""Large ``/ws`` frames: parsed in a worker thread, one at a time, within the server's budget.

Theory of operation. A frame up to :data:`LARGE_FRAME_CHARS` is parsed and validated on the
event loop, where it costs microseconds. A larger one (tens of MiB of JSON) costs tens to
hundreds of milliseconds, during which no other session of the server would step; so it is
parsed in a worker thread (``SRV-MEM-2``), owned by the session that awaits it (a
cancelled session waits for the parse it started, which ends on its own). The parser holds
the interpreter's lock (GIL) for as long as one call runs, so a thread alone does not let
the event loop run meanwhile; what it buys is the rest: the loop is free between calls and
after them. So parses run one at a time, and each next one starts only after the loop had
as long again as the last one took: back to back, four large frames held every session off
for the four parses together; paced, a session waits for at most about one parse.

On the direct ``/ws`` path the frame arrives as :class:`~..hypercorn_adapter.HeldText`: its
UTF-8 bytes, read against the server's budget of bytes in flight (``SRV-MEM-1``,
:mod:`.inflight_bytes`), parsed without making a ``str`` of them, and its room in the budget
is given back as soon as the parse ends. A ``HeldText`` without bytes is a frame the budget
had no room for: it is answered with ``SERVER_BUSY``. Elsewhere (a plain ASGI server,
HTTP/2), or when it came in fragments, the message arrives as text, collected whole by
the WebSocket layer: it counts against the budget from then (its length in characters)
until parsed, and its parse moves to the thread. A binary message is refused at once. A large HTTP
request body (``POST /reset``, ``POST /step``, ``POST /mcp``) and a large ``WS /mcp`` frame
take the same way (:meth:`LargeFrames.parse_body`):
its declared size reserved as the request starts, its parse in the thread, taking its turn.
(The HTTP layer reads such a body meanwhile whatever the budget says: a body that waits
for room is buffered there, so for HTTP the budget bounds the parses, not the reads.)
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import outcome
import trio

from ...core import ClientFrame, ErrorCode, ProtocolError, RpcFailure, decode_client_frame, decode_client_text
from ...ws import FAST_FRAME_LIMIT
from ..hypercorn_adapter.events import HeldText
from .inflight_bytes import InflightBytes

__all__ = ["LARGE_FRAME_CHARS", "LargeFrames"]

#: Frames longer than this (characters of text) are parsed off the event loop.
LARGE_FRAME_CHARS: Final = FAST_FRAME_LIMIT

_Parsed = TypeVar("_Parsed")


def _capture(decode: Callable[[Any], _Parsed], payload: Any) -> outcome.Outcome[_Parsed]:
    """``decode(payload)``'s result or error, as a value handed back from the worker thread.

    An error comes back without its frames: they hold the whole payload, and through the
    worker thread's own frames (each frame keeps its caller) the error itself, a reference
    cycle that would keep the payload until a full collection. A refusal of the payload
    (:class:`ProtocolError`, :class:`RpcFailure`) needs no frames; any other error keeps
    where it was raised as a note."""
    try:
        return outcome.Value(decode(payload))
    except Exception as error:
        return outcome.Error(_without_frames(error))


def _without_frames(error: BaseException) -> BaseException:
    """``error`` and the errors it chains, their tracebacks dropped (see :func:`_capture`)."""
    if not isinstance(error, (ProtocolError, RpcFailure)) and error.__traceback__ is not None:
        error.add_note("raised at:\n" + "".join(traceback.format_tb(error.__traceback__)).rstrip())
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__traceback__ = None
        link = link.__cause__ or link.__context__
    return error


class LargeFrames:
    """The server's budget of bytes in flight and its one worker thread for large parses."""

    def __init__(self, limit_bytes: int, wait_s: float, on_change: Callable[[int], None] | None = None) -> None:
        self.budget = InflightBytes(limit_bytes, wait_s, on_change)
        self._parsing = trio.Lock()
        self._next_parse = -math.inf  # trio clock time before which no parse starts

    async def _parse(self, decode: Callable[[Any], _Parsed], payload: Any) -> _Parsed:
        """``decode(payload)`` in a worker thread, one at a time, paced (see the module doc)."""
        async with self._parsing:
            await trio.sleep_until(self._next_parse)
            started = trio.current_time()
            try:
                return (await trio.to_thread.run_sync(_capture, decode, payload)).unwrap()
            finally:
                ended = trio.current_time()
                self._next_parse = ended + (ended - started)

    async def decode(self, payload: str | bytes | HeldText) -> ClientFrame:
        """The client frame of a large ``payload``, parsed and validated in a worker thread
        (raises :class:`ProtocolError`, ``SERVER_BUSY`` for a frame that found no room)."""
        if isinstance(payload, bytes):
            return decode_client_frame(payload)  # binary: refused at once, nothing to parse
        if isinstance(payload, str):
            return await self.parse_text(payload, decode_client_frame)
        return await self.parse_text(payload, decode_client_text)

    async def parse_text(self, payload: str | HeldText, parse: Callable[[Any], _Parsed]) -> _Parsed:
        """``parse(payload)`` of a large text message in a worker thread, taking its turn
        (a :class:`HeldText`'s UTF-8 bytes are handed over as they are); raises ``parse``'s
        errors, and :class:`ProtocolError` ``SERVER_BUSY`` for a message that found no room."""
        if isinstance(payload, str):  # collected whole elsewhere (fragments, plain ASGI): held from now
            size = len(payload)
            if not await self.budget.reserve(size):
                raise self._busy(f"a message of {size} characters", "it was not parsed")
            try:
                return await self._parse(parse, payload)
            finally:
                self.budget.release(size)
        try:
            if payload.data is None:
                raise self._busy(f"a frame of {payload.size} bytes", "it was dropped unread")
            return await self._parse(parse, payload.data)
        finally:
            payload.release()

    async def parse_body(
        self, size: int, read: Callable[[], Awaitable[bytes]], parse: Callable[[bytes], _Parsed]
    ) -> _Parsed:
        """``parse(await read())`` for an HTTP request body of ``size`` bytes: its room in the
        budget reserved before it is parsed, and given back once ``parse`` (in a worker thread,
        taking its turn with the ``/ws`` frames) is done. Raises ``parse``'s errors, and
        :class:`ProtocolError` ``SERVER_BUSY`` when the budget had no room within its wait."""
        budget = self.budget
        if not await budget.reserve(size):
            raise self._busy(f"a request body of {size} bytes", "it was not parsed")
        try:
            return await self._parse(parse, await read())
        finally:
            budget.release(size)

    def _busy(self, what: str, fate: str) -> ProtocolError:
        return ProtocolError(
            ErrorCode.SERVER_BUSY,
            f"Server busy: no room for {what} within the {self.budget.limit} bytes of large frames the server "
            f"holds at once (SRV-MEM-1); {fate}, nothing ran: send it again later",
        )
