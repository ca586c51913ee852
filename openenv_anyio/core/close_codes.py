"""WebSocket close codes of the protocol (``spec/v1/close-codes.json``).

The registry says what each code means, who sends it and whether a client of the resume
extension may resume its session after it; :class:`CloseCode` is that registry in code (a
test keeps both equal). Every module that sends or judges a close code uses these names.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["CloseCode", "RESUMABLE_CLOSE_CODES"]


class CloseCode(enum.IntEnum):
    """The close-code registry (``spec/v1/close-codes.json``)."""

    NORMAL = 1000  # WS-CLOSE-1
    GOING_AWAY = 1001  # WS-SHUT-1
    PROTOCOL_ERROR = 1002  # RFC 6455 framing broken
    ABNORMAL = 1006  # never sent: the connection ended without a close frame
    INVALID_PAYLOAD = 1007  # a text message is not UTF-8 (WS-CONN-5)
    POLICY_VIOLATION = 1008  # a client closes a server that floods it (WS-ORDER-2)
    MESSAGE_TOO_BIG = 1009  # WS-ERR-6
    INTERNAL_ERROR = 1011  # WS-FACT-1, WS-PING-1
    SERVICE_RESTART = 1012  # EXT-HAND-1: the session is kept in the server's session store
    TRY_AGAIN_LATER = 1013  # WS-CAP-1, WS-DRAIN-1
    SESSION_NOT_FOUND = 4404  # EXT-RES-4, MCP-SES-3
    IDLE_TIMEOUT = 4408  # WS-IDLE-1
    TAKEN_OVER = 4409  # EXT-RES-5, MCP-SES-3
    ENVIRONMENT_LOST = 4410  # SRV-ISO-2


#: Codes after which a client of the resume extension may resume (the registry's
#: ``x-resumable``): the link broke, the session may still be there. The others end it.
RESUMABLE_CLOSE_CODES: Final[frozenset[int]] = frozenset(
    {
        CloseCode.PROTOCOL_ERROR,
        CloseCode.ABNORMAL,
        CloseCode.INVALID_PAYLOAD,
        CloseCode.POLICY_VIOLATION,
        CloseCode.INTERNAL_ERROR,
        CloseCode.SERVICE_RESTART,
        CloseCode.TRY_AGAIN_LATER,
    }
)
