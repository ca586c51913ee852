"""The extra HTTP headers a client sends with every WebSocket opening handshake.

One place holds every header the client adds to its upgrade requests (the caller's
``headers=``, e.g. a bearer token for a private deployment; the resume token on a
reconnection): :class:`HandshakeHeaders`. It is built once per client, checked at once (a bad
name or value is a one-line ``ValueError`` when the client is created, not a failure on the
wire), and asked for the header list on the first connection and on every reconnection.

Header values are secrets as often as not: this module never logs them, and its ``repr``
names the headers without their values. Names the handshake itself owns (``Host``,
``Upgrade``, ``Connection``, ``Sec-WebSocket-*``) and the resume-token header (the client
sends it itself when it resumes) are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from ..core import AFFINITY_HEADER, RESUME_TOKEN_HEADER

__all__ = ["HandshakeHeaders"]

#: RFC 9110 ``token``: what a field name may be made of
_FIELD_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: visible ASCII, spaces and tabs, not starting or ending with whitespace (RFC 9110 field-value)
_FIELD_VALUE: Final = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")
#: names the WebSocket handshake sets itself (lower case)
_HANDSHAKE_OWNED: Final = frozenset(
    {
        "host",
        "upgrade",
        "connection",
        "content-length",
        "transfer-encoding",
        RESUME_TOKEN_HEADER.lower(),
        AFFINITY_HEADER.lower(),
    }
)


class HandshakeHeaders:
    """Validated extra handshake headers, in the order given.

    ``HandshakeHeaders({"Authorization": "Bearer ..."})``; :meth:`for_handshake` returns the
    encoded list for one upgrade request (with ``resume_token`` when resuming). With
    ``affinity_key`` every request also carries ``OpenEnv-Affinity`` (``EXT-AFF-1``).
    """

    __slots__ = ("_affinity", "_encoded", "_names")

    def __init__(
        self,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        *,
        affinity_key: str | None = None,
    ) -> None:
        self._affinity: tuple[bytes, bytes] | None = (
            None if affinity_key is None else (AFFINITY_HEADER.encode("ascii"), affinity_key.encode("ascii"))
        )
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers or ())
        seen: set[str] = set()
        encoded: list[tuple[bytes, bytes]] = []
        for name, value in pairs:
            _check(name, value)
            if name.lower() in seen:
                raise ValueError(f"handshake header {name!r} is given twice")
            seen.add(name.lower())
            encoded.append((name.encode("ascii"), value.encode("ascii")))
        self._encoded: tuple[tuple[bytes, bytes], ...] = tuple(encoded)
        self._names: tuple[str, ...] = tuple(name for name, _ in pairs)

    @property
    def names(self) -> tuple[str, ...]:
        """The header names, as given (values are never exposed for display)."""
        return self._names

    def for_handshake(self, resume_token: str | None = None) -> list[tuple[bytes, bytes]]:
        """The headers of one upgrade request: the extra headers, the affinity key, then the
        resume token if any."""
        headers = list(self._encoded)
        if self._affinity is not None:
            headers.append(self._affinity)
        if resume_token is not None:
            headers.append((RESUME_TOKEN_HEADER.encode("ascii"), resume_token.encode("ascii")))
        return headers

    def __bool__(self) -> bool:
        return bool(self._encoded)

    def __repr__(self) -> str:
        return f"HandshakeHeaders({', '.join(self._names) or 'none'}; values hidden)"


def _check(name: object, value: object) -> None:
    if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
        raise ValueError(f"handshake header name {name!r} is not an HTTP field name (RFC 9110 token)")
    lowered = name.lower()
    if lowered in _HANDSHAKE_OWNED or lowered.startswith("sec-websocket-"):
        raise ValueError(f"handshake header {name!r} is set by the client itself and cannot be given")
    if not isinstance(value, str):
        raise ValueError(f"handshake header {name!r}: the value must be a str, not {type(value).__name__}")
    if not _FIELD_VALUE.fullmatch(value):
        # the value may be a secret: say what is wrong, never what it is
        raise ValueError(
            f"handshake header {name!r}: the value must be visible ASCII characters and inner spaces "
            f"(no line breaks, control characters or surrounding whitespace)"
        )
