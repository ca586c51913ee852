"""Which host names are this machine's own (loopback): the one rule every layer applies.

The client never reaches a loopback server through a proxy; the server turns on what is safe
only for local use (the dashboard page) when it listens on loopback.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` names and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    name = host.lower().strip("[]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
