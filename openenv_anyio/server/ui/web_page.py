"""``GET /web``: the dashboard page (``UI-9``), static files shipped in ``openenv_anyio/web``.

The page is self-contained (no CDN, no build step) and talks only to its own origin, which
its Content-Security-Policy enforces in the browser as well: scripts, styles, connections
(``/ws``, ``/ws/ui``, ``/schema``, ``/metadata``) and images come from the server itself.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from quart import Response, redirect
from quart_trio import QuartTrio

from ...web import WEB_FILES

__all__ = ["WEB_FILES", "add_web_routes"]

_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
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
