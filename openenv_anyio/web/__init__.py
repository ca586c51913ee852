"""The dashboard page served at ``/web`` (``UI-9``): its files, shipped as package data.

Only data lives here (no I/O imports): the server serves these files (``server/ui/web_page.py``)
and its access policy lets anyone load them (``server/access/policy.py``): the page holds nothing
of the server's, and everything it reads (``/ws/ui``, ``/ws``, ``/schema``, ``/metadata``)
is guarded, so with tokens configured the page loads and asks for one.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WEB_FILES", "WEB_PATHS"]

#: The page's files and their media types; nothing else under /web is served.
WEB_FILES: Final = {
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}

#: Every path that serves the page or one of its files.
WEB_PATHS: Final = frozenset({"/web", "/web/", *(f"/web/{name}" for name in WEB_FILES)})
