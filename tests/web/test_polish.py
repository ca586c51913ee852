"""What a person sees on the dashboard, beyond its working: labels that say what a thing is,
charts with axes, no empty boxes, no button that can only fail. Real server, headless
Chromium; a screenshot of each state is kept under the test's tmp_path for a person to look at."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect

from openenv_anyio import EnvClient, Environment
from tests.browser import watched_page
from tests.server.conftest import running

from .conftest import PaintEnv

TIMEOUT_MS = 10_000


class OneStep(Environment):
    """No action schema; an episode ends at its first step; empty metadata on every answer."""

    NON_BLOCKING = True

    def __init__(self) -> None:
        self.steps, self.episode_id = 0, None

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.steps, self.episode_id = 0, episode_id or str(uuid.uuid4())
        return {"position": 0, "info": {}, "metadata": {}, "reward": 0.0, "done": False}

    def step(self, action: Any) -> dict[str, Any]:
        self.steps += 1
        return {"position": 1, "info": {}, "metadata": {}, "reward": 1.0, "done": True}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}


@contextlib.contextmanager
def dashboard_of(browser: Browser, factory: Any) -> Iterator[tuple[Page, str]]:
    with running(factory) as server, watched_page(browser, server.url) as watched:
        watched.page.goto(server.url + "/web")
        expect(watched.page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
        yield watched.page, server.url
        watched.assert_clean()


def test_an_env_without_an_action_schema_gets_a_json_box_not_an_empty_action_form(
    browser: Browser, tmp_path: Path
) -> None:
    with dashboard_of(browser, OneStep) as (page, _):
        page.click("#pg-start")
        expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)
        expect(page.locator("#pg-fields")).to_be_hidden()
        expect(page.locator("#pg-json-toggle")).to_be_hidden()
        expect(page.locator("#pg-json-hint")).to_have_text(re.compile("declares no action schema"))
        expect(page.locator("#pg-json")).to_be_visible()
        page.screenshot(path=str(tmp_path / "no-schema.png"))


def test_step_is_disabled_once_the_episode_is_done_until_a_reset(browser: Browser, tmp_path: Path) -> None:
    with dashboard_of(browser, OneStep) as (page, _):
        page.click("#pg-start")
        expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)
        page.click("#pg-reset")
        expect(page.locator("#pg-step")).to_be_enabled(timeout=TIMEOUT_MS)
        page.fill("#pg-json", '{"move": 1}')
        page.click("#pg-step")
        expect(page.locator("#pg-log li").first).to_contain_text("done true", timeout=TIMEOUT_MS)
        expect(page.locator("#pg-step")).to_be_disabled()
        expect(page.locator("#pg-status")).to_contain_text("episode over")
        page.screenshot(path=str(tmp_path / "done.png"))
        page.click("#pg-reset")
        expect(page.locator("#pg-step")).to_be_enabled(timeout=TIMEOUT_MS)


def test_empty_metadata_and_info_are_not_shown_in_the_observation(browser: Browser) -> None:
    with dashboard_of(browser, OneStep) as (page, url), EnvClient(url).sync() as env:
        env.reset()
        assert env.client.session_id is not None
        page.locator(f'#sessions tbody tr[data-session="{env.client.session_id}"]').click()
        tree = page.locator("#observation")
        expect(tree).to_contain_text("position", timeout=TIMEOUT_MS)
        expect(tree).not_to_contain_text("metadata")
        expect(tree).not_to_contain_text("info")


def test_the_frame_is_labelled_once_and_the_charts_have_axes(browser: Browser, tmp_path: Path) -> None:
    with dashboard_of(browser, PaintEnv) as (page, url), EnvClient(url).sync() as env:
        env.reset()
        env.step({"add": 5})
        env.reset()
        for add in (1, 2):
            env.step({"add": add})
        assert env.client.session_id is not None
        row = page.locator(f'#sessions tbody tr[data-session="{env.client.session_id}"]')
        expect(row.locator("td.steps")).to_have_text("2", timeout=TIMEOUT_MS)
        row.click()
        expect(page.locator("#frame-figure figcaption")).to_have_text("Frame")  # not "Frame frame"
        curve = page.locator("#reward-curve").locator("xpath=ancestor::figure")
        expect(curve.locator(".y-axis")).to_contain_text("return")
        expect(page.locator("#curve-y-high")).to_have_text("3")
        expect(page.locator("#curve-y-low")).to_have_text("0")
        expect(curve.locator(".x-axis")).to_contain_text("step")
        expect(page.locator("#curve-x-high")).to_have_text("2")
        returns = page.locator("#returns-chart").locator("xpath=ancestor::figure")
        expect(returns.locator(".x-axis")).to_contain_text("episode")
        expect(page.locator("#returns-y-high")).to_have_text("5")
        expect(page.locator("#returns-x-high")).to_have_text("10")  # the chart's room: 10 episodes at least
        page.locator("#detail").screenshot(path=str(tmp_path / "detail.png"))
