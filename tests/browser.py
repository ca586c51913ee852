"""A real browser for the tests: headless Chromium (Debian's ``chromium`` package, installed by
``tools/install-test-deps.sh``) driven by Playwright through its public API.

Playwright's own browser downloads are not used: the system Chromium is launched by path. Every
page opened here records console errors, uncaught exceptions and requests to other origins
(less those the browser refused to send: see :data:`REFUSED_BY_POLICY`), so a test can assert
that a page works on its own server alone. :func:`page_server` serves fixed
pages from another loopback port: another origin than any server under test, a foreign web
page as a user would meet one.
"""

from __future__ import annotations

import contextlib
import http.server
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, Request, sync_playwright

__all__ = [
    "CHROMIUM_ARGS",
    "REFUSED_BY_POLICY",
    "WatchedPage",
    "chromium_path",
    "open_browser",
    "page_server",
    "watched_page",
]

#: Headless, no sandbox (tests run as root in CI), nothing that reaches out to the network.
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def chromium_path() -> str:
    """The system Chromium; a failure naming the install script when it is missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Chromium is not installed: run tools/install-test-deps.sh (Debian package 'chromium')")


@contextlib.contextmanager
def open_browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS), headless=True)
        try:
            yield browser
        finally:
            browser.close()


#: What Playwright's ``Request.failure`` reads for a load the page's Content-Security-Policy
#: refused: Chromium checks the policy before a request is made, so such a request never
#: left the browser. Chromium reports some refused loads as a request that then fails (in a
#: page's own document always; in a ``srcdoc`` frame just drawn only now and then, more often
#: on a loaded machine), so a refused load is taken back here once its failure says why. Every
#: other failure (a refused connection, an unsafe port) went out or was meant to: it stays
#: recorded.
REFUSED_BY_POLICY = frozenset({"csp", "net::ERR_BLOCKED_BY_CSP"})


@dataclass
class WatchedPage:
    """A page and what went wrong on it."""

    page: Page
    origin: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors
        assert self.foreign_requests == [], self.foreign_requests


@contextlib.contextmanager
def watched_page(browser: Browser, origin: str) -> Iterator[WatchedPage]:
    """A fresh browser context and page that records errors and requests leaving ``origin``."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    watched = WatchedPage(page, origin)
    page.on("console", lambda message: message.type == "error" and watched.console_errors.append(message.text))
    page.on("pageerror", lambda error: watched.page_errors.append(str(error)))

    def note_request(request: object) -> None:
        url = request.url
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "ws", "wss"):
            netloc = urlsplit(origin).netloc
            if parts.netloc != netloc:
                watched.foreign_requests.append(url)

    def note_refusal(request: Request) -> None:
        if request.failure in REFUSED_BY_POLICY and request.url in watched.foreign_requests:
            watched.foreign_requests.remove(request.url)

    page.on("request", note_request)
    page.on("requestfailed", note_refusal)
    page.on("websocket", lambda socket: note_request(socket))
    try:
        yield watched
    finally:
        context.close()


@contextlib.contextmanager
def page_server(pages: Mapping[str, str]) -> Iterator[str]:
    """Serve ``pages`` (path -> HTML) on 127.0.0.1 at a free port; yields the origin URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?", 1)[0])
            if body is None:
                self.send_error(404)
                return
            data = body.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="page-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
