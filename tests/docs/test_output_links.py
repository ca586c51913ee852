"""The HTML page is self-contained (fetches nothing) and every link of the reference lands."""

from __future__ import annotations

import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from openenv_anyio.core import load_spec
from openenv_anyio.docs import generate

from .spec_copy import VERSION_DIR, write_example

#: Attributes through which a browser fetches something when the page loads.
_FETCHING = {"src", "srcset", "poster", "data", "background", "action", "formaction"}
_EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


class _PageParts(HTMLParser):
    """Collects the tags, ids, local link targets and style text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.ids: set[str] = set()
        self.fragments: list[str] = []
        self.fetches: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_style = tag == "style"
        for name, value in attrs:
            value = value or ""
            if name == "id":
                self.ids.add(value)
            elif name == "style":
                self.styles.append(value)
            elif name == "href" and value.startswith("#"):
                self.fragments.append(value[1:])
            elif name in _FETCHING or (tag == "link" and name == "href"):
                self.fetches.append(f"<{tag} {name}={value}>")
            elif name == "href" and _EXTERNAL.match(value):
                self.fetches.append(f"<{tag} href={value}> (leaves the page)")

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


@pytest.fixture(scope="module")
def page() -> _PageParts:
    parts = _PageParts()
    parts.feed(generate(load_spec(VERSION_DIR.parent), "html")["index.html"])
    parts.close()
    return parts


def test_the_page_fetches_nothing(page: _PageParts) -> None:
    assert "style" in page.tags, "the CSS must be inline"
    assert not {"script", "link", "img", "iframe", "object", "embed", "video", "audio", "base"} & set(page.tags)
    assert page.fetches == []
    css = "\n".join(page.styles)
    assert css.strip()
    assert not re.search(r"url\s*\(|@import|https?:", css, re.IGNORECASE), "CSS must not load anything"


def test_every_in_page_link_has_a_target(page: _PageParts) -> None:
    assert page.fragments
    assert sorted(set(page.fragments) - page.ids) == []


def _markdown_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_every_markdown_link_lands_on_a_page_and_anchor(spec_copy: Path) -> None:
    write_example(
        spec_copy,
        "invalid/docs-bad-seed.json",
        entry="client-frame",
        valid=False,
        description="bad seed",
        frame={"type": "reset", "data": {"seed": -1}},
        expect_code="VALIDATION_ERROR",
    )
    pages = generate(load_spec(spec_copy))
    checked = 0
    for name, text in pages.items():
        for link in _markdown_links(text):
            assert not _EXTERNAL.match(link), f"{name}: external link {link}"
            target, _, anchor = link.partition("#")
            target_page = posixpath.normpath(posixpath.join(posixpath.dirname(name), target)) if target else name
            assert target_page in pages, f"{name}: link {link} leads to no page"
            if anchor:
                assert f'<a id="{anchor}"></a>' in pages[target_page], f"{name}: link {link} has no anchor"
            checked += 1
    assert checked > 20
