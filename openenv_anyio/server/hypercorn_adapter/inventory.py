"""The inventory of Hypercorn's private names the adapter uses, and the check that they exist.

Hypercorn has no API for what the adapter does, so it replaces a few of Hypercorn's names
while one of our servers runs (:data:`PATCHED`, each with why) and reads a few more
(:data:`READ`). Every such name is listed here and nowhere else; :func:`missing` resolves
each one in the installed Hypercorn, so an upgrade that renames or drops one is reported
before anything is patched, instead of silently switching a patch off.

A name is ``"module:Attribute.attribute"``. An instance attribute (set in ``__init__`` or
another method) counts as present when some method of the class assigns or reads it.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["HYPERCORN_SERIES", "Patch", "READ", "missing", "resolve"]

#: The Hypercorn release series the patches are written and tested for.
HYPERCORN_SERIES: Final = "0.18."


@dataclass(frozen=True, slots=True)
class Patch:
    """One name of Hypercorn replaced while a server of ours runs.

    ``build`` receives the original value and returns the replacement.
    """

    target: str
    build: Callable[[Any], Any]
    purpose: str


#: Names read (not replaced), by the module that reads them.
READ: Final[tuple[str, ...]] = (
    # direct_ws: up to the accepted handshake, Hypercorn's stream; after it, the connection's
    # task and socket (frames are the server-role WebSocketConnection's, never Hypercorn's)
    "hypercorn.events:Closed",
    "hypercorn.events:RawData",
    "hypercorn.protocol.events:Data",
    "hypercorn.protocol.events:Request",
    "hypercorn.protocol.events:StreamClosed",
    "hypercorn.protocol.h11:H11WSConnection.buffer",
    "hypercorn.protocol.ws_stream:ASGIWebsocketState.CONNECTED",
    "hypercorn.protocol.ws_stream:ASGIWebsocketState.CLOSED",
    "hypercorn.protocol.ws_stream:WSStream.app",
    "hypercorn.protocol.ws_stream:WSStream.app_put",
    "hypercorn.protocol.ws_stream:WSStream.app_send",
    "hypercorn.protocol.ws_stream:WSStream.closed",
    "hypercorn.protocol.ws_stream:WSStream.config",
    "hypercorn.protocol.ws_stream:WSStream.handshake",
    "hypercorn.protocol.ws_stream:WSStream.send",
    "hypercorn.protocol.ws_stream:WSStream.state",
    "hypercorn.protocol.ws_stream:WSStream.stream_id",
    "hypercorn.protocol.ws_stream:WSStream.task_group",
    "hypercorn.trio.tcp_server:TCPServer.config",
    "hypercorn.trio.tcp_server:TCPServer.protocol",
    "hypercorn.trio.tcp_server:TCPServer.send_lock",
    "hypercorn.trio.tcp_server:TCPServer.stream",
    # direct_upgrade: the connection handler Hypercorn's worker serves its listeners with
    # (``TCPServer`` with app, config, context and state bound), the headers and the access
    # log line Hypercorn gives a response
    "hypercorn.trio.tcp_server:TCPServer.app",
    "hypercorn.trio.tcp_server:TCPServer.state",
    "hypercorn.config:Config.response_headers",
    "hypercorn.config:Config.log",
    "hypercorn.logging:Logger.access",
    # liveness: Hypercorn's own streams (HTTP/2, and the routes that are not direct: /ws/ui,
    # /mcp) tap the wsproto connection they build at accept
    "hypercorn.protocol.ws_stream:WSStream.connection",
    "hypercorn.protocol.ws_stream:WSStream._accept",
    "hypercorn.protocol.ws_stream:WSStream._send_wsproto_event",
    # early_response: plain HTTP/1.1 connections of our servers only
    "hypercorn.protocol.h11:H11Protocol.config",
    "hypercorn.protocol.h11:H11Protocol.connection",
    # keepalive_timer: start the idle timer without waiting for it
    "hypercorn.trio.task_group:TaskGroup._nursery",
    "hypercorn.trio.task_group:TaskGroup.spawn_app",
)


def resolve(target: str) -> tuple[Any, str]:
    """``(owner, attribute)`` of ``target``: the module or class that holds the name."""
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name


def _methods(cls: type) -> Iterator[types.CodeType]:
    for klass in cls.__mro__:
        for value in vars(klass).values():
            function = getattr(value, "__func__", value)
            code = getattr(function, "__code__", None)
            if isinstance(code, types.CodeType):
                yield code


def _present(target: str) -> bool:
    try:
        owner, name = resolve(target)
    except (ImportError, AttributeError):
        return False
    if hasattr(owner, name):
        return True
    return isinstance(owner, type) and any(name in code.co_names for code in _methods(owner))


def missing(patched: tuple[Patch, ...]) -> list[str]:
    """The names of :data:`READ` and of ``patched`` that the installed Hypercorn lacks."""
    return [target for target in (*READ, *(patch.target for patch in patched)) if not _present(target)]
