"""Every HTTP/1.1 response of our servers carries its status's reason phrase (``422
Unprocessable Entity``, not ``422 ``): Hypercorn builds h11's ``Response`` without one, and
clients that show or match the status line (upstream's callers among them) see it empty."""

from __future__ import annotations

import functools
from http import HTTPStatus
from typing import Any

import h11

from .events import SEND_TIMEOUT_ATTR
from .inventory import Patch

__all__ = ["PATCHES"]


def _phrase(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:  # a status the standard library does not name
        return b""


def _with_reason_phrase(original: Any) -> Any:
    @functools.wraps(original)
    async def _send_h11_event(self: Any, event: Any) -> None:
        if type(event) is h11.Response and not event.reason and hasattr(self.config, SEND_TIMEOUT_ATTR):
            event = h11.Response(
                status_code=event.status_code,
                headers=[(name, value) for name, value in event.headers.raw_items()],
                reason=_phrase(event.status_code),
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
