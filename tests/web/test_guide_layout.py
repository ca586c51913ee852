"""The built user guide as a reader sees it, in headless Chromium at an ordinary window width:
no page hides part of a table (the theme keeps cells on one line and scrolls the table
sideways, which cut the home page's "read" column off at 1280 px)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser

from tests.guide_site import build_guide

WIDTH = 1280


def test_no_table_of_the_guide_is_wider_than_its_page_at_1280_px(browser: Browser, tmp_path: Path) -> None:
    site = build_guide(tmp_path / "site")
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    clipped = []
    try:
        for html in sorted(site.rglob("index.html")):
            page.goto(html.as_uri())
            widths = page.evaluate(
                """() => Array.from(document.querySelectorAll('.wy-table-responsive table'))
                          .map(t => [t.scrollWidth, t.parentElement.clientWidth])"""
            )
            clipped += [f"{html.relative_to(site)}: {wide} > {room}" for wide, room in widths if wide > room + 1]
        page.goto((site / "index.html").as_uri())
        page.screenshot(path=str(tmp_path / "home.png"), full_page=True)
    finally:
        page.close()
    assert clipped == []
