"""The access policy (:mod:`.policy`) applied to ASGI scopes: the one guard of every route.

:func:`admit` decides a scope once and records the granted role in it (:func:`role_of`
reads it back in a handler); :func:`refuse` answers a refused request: an HTTP response,
or for a WebSocket handshake the same response instead of the upgrade (ASGI's
``websocket.http.response`` extension), so a browser's ``WebSocket`` fails to open.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

import trio

from ...core import dumps
from ..asgi import AsgiReceive, AsgiSend
from .policy import AccessPolicy, AccessRequest, Decision, Granted, Refused, Role, decide, route_path

__all__ = ["ROLE_KEY", "admit", "refuse", "role_of"]

#: The scope key that carries the :class:`~.policy.Role` granted to a request.
ROLE_KEY: Final = "openenv_anyio.role"

#: A refused request's body up to this size is read and dropped, so the connection serves the
#: next request; a larger (or unsized) body is not read: the refusal says ``Connection: close``.
DRAINED_BODY_LIMIT: Final = 64 * 1024
#: How long a refused request's declared body may take to arrive before the connection is dropped.
DRAIN_TIMEOUT_S: Final = 5.0


def admit(policy: AccessPolicy, scope: dict[str, Any]) -> Decision:
    """Decide ``scope`` (an ``http`` or ``websocket`` scope); a granted role is stored in it.

    The scope's path becomes the one decided on (:func:`~.access.route_path`), so every
    router after this one routes by the path the decision saw."""
    path = route_path(scope["path"])
    if path != scope["path"]:
        scope["path"] = path
        scope["raw_path"] = quote(path).encode("ascii")
    decision = decide(
        AccessRequest(
            method=scope.get("method", "GET"),
            path=path,
            headers=scope.get("headers") or (),
            websocket=scope["type"] == "websocket",
        ),
        policy,
    )
    if isinstance(decision, Granted):
        scope[ROLE_KEY] = decision.role
    return decision


def role_of(scope: dict[str, Any]) -> Role:
    """The role :func:`admit` granted (an unguarded scope is a bug, not a default)."""
    role = scope.get(ROLE_KEY)
    if not isinstance(role, Role):
        raise LookupError("this scope did not pass the access guard")
    return role


async def refuse(scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend, refused: Refused) -> None:
    """Answer ``refused`` on ``scope``'s connection; nothing else runs for it."""
    body = dumps({"detail": refused.reason}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        *refused.headers,
    ]
    if scope["type"] == "websocket":
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    if not await _drained(scope, receive):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _drained(scope: dict[str, Any], receive: AsgiReceive) -> bool:
    """Read and drop a refused request's body when it is small and sized; whether it was.

    An HTTP/1.1 response sent before the request body has been read leaves the connection
    unable to serve another request, so a keep-alive client would find it closed under it."""
    lengths = [value for name, value in scope.get("headers") or () if name.lower() == b"content-length"]
    if len(lengths) != 1 or not lengths[0].isdigit() or int(lengths[0]) > DRAINED_BODY_LIMIT:
        return not lengths and not any(name.lower() == b"transfer-encoding" for name, _ in scope.get("headers") or ())
    with trio.move_on_after(DRAIN_TIMEOUT_S):
        while True:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return bool(message["type"] == "http.request")
    return False
