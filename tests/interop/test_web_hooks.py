"""openenv 0.10's ``/web`` hooks on an upstream-written environment served by our server
through the adapter (in each peer's venv): the dashboard's playground shows its
``render_web`` drawing and its ``web_actions`` in headless Chromium; the template, which
defines neither, draws nothing (openenv 0.10's base class defaults are not hooks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.browser import open_browser, watched_page
from tests.upstream_peers import PEER_SIDE, Peer, serve_ours

from .conftest import TEMPLATE_TARGET

TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with open_browser() as opened:
        yield opened


@pytest.fixture(scope="module")
def strip_url(peer: Peer) -> Iterator[str]:
    with serve_ours(peer, PEER_SIDE, "upstream_board_env:StripEnvironment") as url:
        yield url


def test_the_playground_draws_an_adapted_env_and_steps_it_in_one_click(browser: Browser, strip_url: str) -> None:
    with watched_page(browser, strip_url) as watched:
        page = watched.page
        page.goto(strip_url + "/web")
        expect(page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
        page.click("#pg-start")
        expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)
        page.click("#pg-reset")
        strip = page.frame_locator("#pg-drawing").locator("#strip")
        expect(strip).to_have_text("...", timeout=TIMEOUT_MS)
        expect(page.locator("#pg-actions button")).to_have_text(["mark 0", "mark 1", "mark 2"])
        page.click("#pg-actions button:text-is('mark 1')")
        expect(strip).to_have_text(".#.", timeout=TIMEOUT_MS)
        expect(page.locator("#pg-actions button")).to_have_text(["mark 0", "mark 2"])
        page.click("#pg-state")
        expect(page.locator("#pg-log li").first).to_contain_text("steps 1", timeout=TIMEOUT_MS)
        watched.assert_clean()


def test_the_view_of_a_done_episode_offers_no_action(strip_url: str) -> None:
    data = {"observation": {"cells": ["#", "#", "#"]}, "reward": 1.0, "done": True}
    view = httpx.post(strip_url + "/web/view", json=data, trust_env=False).json()
    assert view == {
        "html": '<p id="strip"><span class="cell" data-cell="0">#</span>'
        '<span class="cell" data-cell="1">#</span><span class="cell" data-cell="2">#</span></p>',
        "actions": [],
    }


def test_the_template_draws_nothing(peer: Peer, upstream_template: Callable[..., Path]) -> None:
    with serve_ours(peer, upstream_template(peer), TEMPLATE_TARGET) as url:
        data = {"observation": {"echoed_message": "x", "message_length": 1}, "reward": 0.1, "done": False}
        assert httpx.post(url + "/web/view", json=data, trust_env=False).json() == {"html": None, "actions": []}
