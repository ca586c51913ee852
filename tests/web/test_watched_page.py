"""The browser watcher (``tests/browser.py``) records a load from another origin that leaves
the browser, and not one the page's Content-Security-Policy refused before it was made: the
isolation test of the drawing relies on both."""

from __future__ import annotations

from playwright.sync_api import Browser

from tests.browser import page_server, watched_page

REFUSING = '<meta http-equiv="Content-Security-Policy" content="img-src \'none\'"><img src="{src}" alt="">'
LOADING = '<img src="{src}" alt="">'


def test_a_load_from_another_origin_is_recorded(browser: Browser) -> None:
    with page_server({}) as elsewhere:
        src = elsewhere + "/pixel.png"
        with page_server({"/": LOADING.format(src=src)}) as site, watched_page(browser, site) as watched:
            watched.page.goto(site + "/", wait_until="load")
            assert watched.foreign_requests == [src]


def test_a_load_the_policy_refused_is_not_recorded(browser: Browser) -> None:
    with page_server({}) as elsewhere:
        src = elsewhere + "/pixel.png"
        with page_server({"/": REFUSING.format(src=src)}) as site, watched_page(browser, site) as watched:
            watched.page.goto(site + "/", wait_until="load")
            assert watched.foreign_requests == []
            assert any("Content Security Policy" in error and src in error for error in watched.console_errors)
