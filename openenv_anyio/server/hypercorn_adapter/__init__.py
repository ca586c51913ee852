"""All contact with Hypercorn's internals: one :func:`install`, the inventory of the private
names it uses, and a check of both before anything is patched.

Hypercorn serves our ASGI application as it serves any other; these patches make it serve
ours better (each module says why; bench/README.md, "Server CPU per step" and "Server CPU per connection"):

- ``direct_upgrade``: a ``/ws`` upgrade whose head is whole at accept is answered without
  Hypercorn, and its session runs on the connection's socket (``direct_io``; less server CPU
  per connection);
- ``direct_ws``: the other ``/ws`` sessions run in the connection's own task too; after
  Hypercorn's handshake the connection is :mod:`openenv_anyio.ws`'s, on its socket (less
  server CPU per step);
- ``liveness``: pings whose pongs the session sees (``WS-PING-1``), the peer's close as it
  arrives (``WS-CAP-2``), close frames for bytes that break RFC 6455 (``WS-CLOSE-3``);
- ``connection_guards``: a write to a peer that stopped reading gives up; one connection's
  failure ends that connection only;
- ``early_response``: a kept-alive HTTP/1.1 connection answered before its request body
  arrived is closed, and says so, never left silent;
- ``reason_phrases``: every HTTP/1.1 status line carries its reason phrase;
- ``keepalive_timer``: idle timers that do not park the connection;
- ``accept_bursts``: listeners that take every pending connection after one wait, and the
  seam through which worker processes route connections (:func:`routed_connections`).

:func:`install` is a context manager held by every running server: the first one in checks
the Hypercorn version (:data:`~.inventory.HYPERCORN_SERIES`) and that every name of the
inventory exists, then applies every patch; the last one out puts Hypercorn's own names
back. When the check fails, nothing is patched: a warning names what is missing and the
server runs as a plain ASGI application on stock Hypercorn (correct, slower: no fast
``/ws`` path, no pings, permessage-deflate negotiated). The patched names are process-wide
while any of our servers runs; ``direct_ws``, ``liveness``, ``connection_guards``,
``early_response`` and ``reason_phrases`` act only on connections of our application or
config, the other two only do Hypercorn's own job for less.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import threading
import warnings
from collections.abc import Iterator
from typing import Any, Final

from . import accept_bursts, connection_guards, direct_ws, early_response, keepalive_timer, liveness, reason_phrases
from .accept_bursts import ConnectionRouting, HeadWindow, routed_connections
from .events import (
    HELD_TEXT,
    INFLIGHT_BUDGET_ATTR,
    INVALID_TEXT_REPLY,
    PEER_CLOSE_EVENT,
    PING_EVENT,
    SEND_TIMEOUT_ATTR,
    DirectHandler,
    HeldText,
    InflightBudget,
    PongProbe,
)
from .inventory import HYPERCORN_SERIES, READ, Patch, missing, resolve

__all__ = [
    "ConnectionRouting",
    "HeadWindow",
    "DirectHandler",
    "HELD_TEXT",
    "HYPERCORN_SERIES",
    "HeldText",
    "INFLIGHT_BUDGET_ATTR",
    "InflightBudget",
    "INVALID_TEXT_REPLY",
    "PATCHES",
    "PEER_CLOSE_EVENT",
    "PING_EVENT",
    "PongProbe",
    "READ",
    "SEND_TIMEOUT_ATTR",
    "install",
    "problems",
    "routed_connections",
]

#: Every patch, in the order applied (undone in reverse).
PATCHES: Final[tuple[Patch, ...]] = (
    *liveness.PATCHES,
    *direct_ws.PATCHES,
    *connection_guards.PATCHES,
    *early_response.PATCHES,
    *reason_phrases.PATCHES,
    *keepalive_timer.PATCHES,
    *accept_bursts.PATCHES,
)

_lock = threading.Lock()
_holders = 0
_originals: list[tuple[Any, str, Any]] = []


def problems() -> list[str]:
    """Why the patches cannot be applied to the installed Hypercorn (empty when they can)."""
    found: list[str] = []
    try:
        version = importlib.metadata.version("hypercorn")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    if not version.startswith(HYPERCORN_SERIES):
        found.append(f"Hypercorn {version} is not the {HYPERCORN_SERIES}x series the patches are written for")
    found += [f"Hypercorn has no {name}" for name in missing(PATCHES)]
    return found


def _apply() -> None:
    for patch in PATCHES:
        owner, name = resolve(patch.target)
        original = getattr(owner, name)
        _originals.append((owner, name, original))
        setattr(owner, name, patch.build(original))


def _undo() -> None:
    while _originals:
        owner, name, original = _originals.pop()
        setattr(owner, name, original)


@contextlib.contextmanager
def install(*, plain: bool = False) -> Iterator[bool]:
    """Hold the patches while the block runs; yields whether they are engaged.

    ``plain=True`` (or a failed check, with a warning) engages nothing: the server runs as
    a plain ASGI application.
    """
    global _holders
    engaged = False
    if not plain:
        with _lock:
            if _holders == 0:
                found = problems()
                if found:
                    warnings.warn(
                        "serving plain ASGI on stock Hypercorn (slower /ws, no pings): " + "; ".join(found),
                        RuntimeWarning,
                        stacklevel=3,
                    )
                else:
                    _apply()
                    _holders = 1
                    engaged = True
            else:
                _holders += 1
                engaged = True
    try:
        yield engaged
    finally:
        if engaged:
            with _lock:
                _holders -= 1
                if _holders == 0:
                    _undo()
