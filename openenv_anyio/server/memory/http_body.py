"""An HTTP request body read and parsed where its size says (``SRV-MEM-1``, ``SRV-MEM-2``):
a body up to :data:`~.large_frames.LARGE_FRAME_CHARS` on the event loop, where it costs
microseconds; a larger one held to the server's budget of bytes in flight and parsed in the
large-frame thread, taking its turn with ``/ws`` frames. Every route with a JSON body reads it
through :func:`parse_request_body` (``POST /reset``, ``/step`` and ``/mcp``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from quart import Response, request

from ...core import ErrorCode, ProtocolError, dumps
from .large_frames import LARGE_FRAME_CHARS, LargeFrames

__all__ = ["busy_response", "parse_request_body"]

_Parsed = TypeVar("_Parsed")


async def parse_request_body(large_frames: LargeFrames, parse: Callable[[bytes], _Parsed]) -> _Parsed:
    """``parse(body)`` of the current request; raises what ``parse`` raises, and
    :class:`ProtocolError` ``SERVER_BUSY`` when a large body found no room in the budget."""

    async def read() -> bytes:
        data = await request.get_data(as_text=False)
        assert isinstance(data, bytes)
        return data

    size = request.content_length
    if size is not None and size > LARGE_FRAME_CHARS:
        return await large_frames.parse_body(size, read, parse)
    raw = await read()
    if len(raw) > LARGE_FRAME_CHARS:  # a chunked body: its size is known once read

        async def again() -> bytes:
            return raw

        return await large_frames.parse_body(len(raw), again, parse)
    return parse(raw)


def busy_response(error: ProtocolError) -> Response:
    """503 for a body the budget had no room for (``Retry-After``; the body was not read, so
    the connection takes no next request)."""
    assert error.code is ErrorCode.SERVER_BUSY
    busy = Response(
        dumps({"detail": error.message, "code": error.code.value}), status=503, content_type="application/json"
    )
    busy.headers["Retry-After"] = "1"
    busy.headers["Connection"] = "close"
    return busy
