"""The ASGI vocabulary every endpoint of the server speaks: message, receive, send, and the
one way a WebSocket is closed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeAlias

from ..core import CloseCode

__all__ = ["AsgiMessage", "AsgiReceive", "AsgiSend", "close_websocket"]

AsgiMessage: TypeAlias = MutableMapping[str, Any]
AsgiReceive: TypeAlias = Callable[[], Awaitable[AsgiMessage]]
AsgiSend: TypeAlias = Callable[[AsgiMessage], Awaitable[None]]


async def close_websocket(send: AsgiSend, code: CloseCode, reason: str = "") -> None:
    await send({"type": "websocket.close", "code": int(code), "reason": reason})
