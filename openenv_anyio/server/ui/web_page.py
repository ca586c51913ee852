"""``GET /web``: the dashboard page (``UI-9``), static files shipped in ``openenv_anyio/web``.

The page is self-contained (no CDN, no build step) and talks only to its own origin, which
its Content-Security-Policy enforces in the browser as well: scripts, connections (``/ws``,
``/ws/ui``, ``/schema``, ``/metadata``, ``/web/view``) and images come from the server itself.
Inline styles are allowed for one reason: the environment's drawing (``UI-10``) is a
``srcdoc`` frame, which inherits this policy, and a drawing is styled inline. The page itself
puts nothing from the server into its markup, and the frame is sandboxed with a stricter
policy of its own (no scripts, no requests, an opaque origin).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from quart import Response, redirect
from quart_trio import QuartTrio

from ...web import WEB_FILES

__all__ = ["WEB_FILES", "WEB_VIEW_ROUTE", "add_web_routes"]

#: ``POST``: the environment's drawing and one-click actions for an observation (``UI-10``);
#: guarded like ``/schema`` (it is no file of the page)
WEB_VIEW_ROUTE: Final = "/web/view"

_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(name: str) -> bytes:
    return files("openenv_anyio.web").joinpath(name).read_bytes()


def add_web_routes(app: QuartTrio) -> None:
    """Serve the page at ``/web/`` (``/web`` redirects there, so relative links resolve)."""
    pages = {name: _read(name) for name in WEB_FILES}

    @app.get("/web")
    async def web_root() -> Response:
        return redirect("/web/")  # type: ignore[return-value]

    @app.get("/web/")
    @app.get("/web/<name>")
    async def web_file(name: str = "index.html") -> Response:
        body = pages.get(name)
        if body is None:
            return Response("not found", status=404, content_type="text/plain; charset=utf-8")
        return Response(body, content_type=WEB_FILES[name], headers=_HEADERS)
