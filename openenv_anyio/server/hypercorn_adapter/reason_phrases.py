"""Every HTTP/1.1 response of our servers carries its status's reason phrase (``422
Unprocessable Entity``, not ``422 ``; a WebSocket's ``101 Switching Protocols``): Hypercorn
builds h11's responses without one, and clients that show or match the status line
(upstream's callers among them) see it empty."""

from __future__ import annotations

import functools
from http import HTTPStatus
from typing import Any

import h11

from .events import SEND_TIMEOUT_ATTR
from .inventory import Patch

__all__ = ["PATCHES", "phrase"]


def phrase(status: int) -> bytes:
    """The reason phrase of ``status`` (empty for a status the standard library does not name)."""
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:  # a status the standard library does not name
        return b""


_RESPONSES = (h11.Response, h11.InformationalResponse)  # the 101 of a WebSocket is the second


def _with_reason_phrase(original: Any) -> Any:
    @functools.wraps(original)
    async def _send_h11_event(self: Any, event: Any) -> None:
        kind = type(event)
        if kind in _RESPONSES and not event.reason and hasattr(self.config, SEND_TIMEOUT_ATTR):
            event = kind(
                status_code=event.status_code,
                headers=[(name, value) for name, value in event.headers.raw_items()],
                reason=phrase(event.status_code),
            )
        await original(self, event)

    return _send_h11_event


PATCHES = (
    Patch(
        "hypercorn.protocol.h11:H11Protocol._send_h11_event",
        _with_reason_phrase,
        "a response's status line carries its reason phrase",
    ),
)
