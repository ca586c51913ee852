"""Session affinity for load balancers (``EXT-AFF-1``), sans-IO.

A client sends the same random key in the ``OpenEnv-Affinity`` opening-handshake header on
every connection of one session (the first one and each resume), so a load balancer that
hashes on the header (HAProxy ``balance hdr(OpenEnv-Affinity)``, nginx ``hash
$http_openenv_affinity consistent``, Envoy ``RING_HASH``) sends a resume to the server that
holds the session. The key is not a credential (the resume token is): it only steers.
"""

from __future__ import annotations

import re
import secrets
from typing import Final

__all__ = ["AFFINITY_HEADER", "check_affinity_key", "new_affinity_key"]

#: The opening-handshake request header that carries a session's affinity key.
AFFINITY_HEADER: Final = "OpenEnv-Affinity"
#: What a key may be: 8 to 128 URL-safe characters (a header value every proxy passes as is).
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{8,128}")
_KEY_BYTES: Final = 16


def new_affinity_key() -> str:
    """A fresh key: 128 random bits, URL-safe base64 (22 characters)."""
    return secrets.token_urlsafe(_KEY_BYTES)


def check_affinity_key(key: str) -> str:
    """``key`` when it is a valid affinity key, else ``ValueError`` (one line)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError("an affinity key is 8 to 128 characters from A-Z, a-z, 0-9, '-' and '_'")
    return key
