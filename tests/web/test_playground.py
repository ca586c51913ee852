"""The dashboard's playground in a real browser: an environment's own drawing and one-click
actions (``render_web``, ``web_actions``: UI-10), shown isolated from the page; secrets masked,
Enter steps, a failed reset keeps the episode; the form starts valid, the log's numbers are
whole, and a disconnected page does not claim there are no sessions.

Every test but the isolation one checks that the page logged no error and asked nothing of
another origin (the isolation test expects the browser's refusals of what the drawing tried).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, FrameLocator, Page, expect

from openenv_anyio import Environment
from openenv_anyio.environment import has_web_hooks, web_view
from openenv_anyio.server import RunningServer
from tests.browser import WatchedPage, watched_page
from tests.server.conftest import running
from tests.server.envs import BoardEnv

from .conftest import PaintEnv

TIMEOUT_MS = 10_000


class FlakyBoardEnv(BoardEnv):
    """A board whose second reset (per instance) fails: the playground keeps the episode."""

    def __init__(self) -> None:
        super().__init__()
        self.resets = 0

    def reset(self, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.resets += 1
        if self.resets == 2:
            raise RuntimeError("the board is stuck to the table")
        return super().reset(episode_id, **kwargs)


class SneakyBoardEnv(BoardEnv):
    """Its drawing tries what a hostile drawing would: run a script, reach the page that shows
    it, load something from elsewhere."""

    def render_web(self, observation: Mapping[str, Any]) -> str | None:
        board = super().render_web(observation) or ""
        return (
            board
            + "<script>document.body.dataset.ran = 'yes'; parent.document.title = 'taken';</script>"
            + '<img id="beacon" src="http://127.0.0.1:9/beacon.png" alt="">'
        )


class LoginEnv(Environment):
    """Takes a query and two secrets; says whether the key was right, never echoes it."""

    NON_BLOCKING = True
    action_schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "default": "weather"},
            "api_key": {"type": "string"},
            "session_token": {"type": "string"},
            "retries": {"type": "integer", "minimum": 1},
        },
        "required": ["query", "api_key", "retries"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.steps = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.steps = 0
        return {"answer": "", "reward": 0.0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        right = action["api_key"] == "s3cret-key" and action.get("session_token") == "tok-42"
        return {
            "answer": f"{action['query']} x{action['retries']}",
            "authorised": right,
            "reward": 1.0 if right else 0.0,
        }

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.steps}


@pytest.fixture(scope="module")
def board_server() -> Iterator[RunningServer]:
    with running(FlakyBoardEnv) as server:
        yield server


@pytest.fixture
def board(browser: Browser, board_server: RunningServer) -> Iterator[WatchedPage]:
    with watched_page(browser, board_server.url) as watched:
        start_session(watched.page, board_server)
        yield watched
        watched.assert_clean()


def start_session(page: Page, server: RunningServer) -> None:
    page.goto(server.url + "/web")
    expect(page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
    page.click("#pg-start")
    expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)


def drawing(page: Page) -> FrameLocator:
    return page.frame_locator("#pg-drawing")


def test_the_drawing_appears_and_a_one_click_action_steps_the_session(
    board: WatchedPage, board_server: RunningServer
) -> None:
    page = board.page
    page.click("#pg-reset")
    expect(drawing(page).locator("#board td.cell")).to_have_count(9, timeout=TIMEOUT_MS)
    actions = page.locator("#pg-actions button")
    expect(actions).to_have_count(9)
    expect(actions.first).to_have_text("play 0")
    page.click("#pg-actions button:text-is('play 4')")
    expect(drawing(page).locator('td[data-cell="4"]')).to_have_text("X", timeout=TIMEOUT_MS)  # the drawing follows
    expect(actions).to_have_count(8)  # the legal moves follow too
    expect(page.locator("#pg-actions button:text-is('play 4')")).to_have_count(0)
    page.click("#pg-actions button:text-is('play 0')")
    expect(drawing(page).locator('td[data-cell="0"]')).to_have_text("O", timeout=TIMEOUT_MS)
    page.click("#pg-state")
    expect(page.locator("#pg-log li").first).to_contain_text("steps 2", timeout=TIMEOUT_MS)
    # the session the buttons stepped is the page's own, seen by every dashboard
    listed = httpx.get(board_server.url + "/schema", trust_env=False).json()
    assert listed["reset_observation"]["title"] == "Welcome"


def test_a_failed_reset_keeps_the_episode_its_drawing_and_actions(board: WatchedPage) -> None:
    page = board.page
    page.click("#pg-reset")
    expect(page.locator("#pg-actions button")).to_have_count(9, timeout=TIMEOUT_MS)
    page.click("#pg-actions button:text-is('play 2')")
    expect(drawing(page).locator('td[data-cell="2"]')).to_have_text("X", timeout=TIMEOUT_MS)
    page.click("#pg-reset")  # this environment's second reset fails
    log = page.locator("#pg-log li")
    expect(log.first).to_contain_text(
        "the reset failed: the episode, its drawing and its actions are kept", timeout=TIMEOUT_MS
    )
    expect(page.locator("#pg-log li.error").nth(1)).to_contain_text("the board is stuck to the table")
    expect(drawing(page).locator('td[data-cell="2"]')).to_have_text("X")
    expect(page.locator("#pg-actions button")).to_have_count(8)
    page.click("#pg-actions button:text-is('play 5')")  # the episode goes on where it was
    expect(drawing(page).locator('td[data-cell="5"]')).to_have_text("O", timeout=TIMEOUT_MS)
    page.click("#pg-state")
    expect(log.first).to_contain_text("steps 2", timeout=TIMEOUT_MS)
    assert page.locator("#pg-log li.episode").count() == 1  # one episode began: the first reset's


def test_the_form_starts_from_the_schemas_example_and_enter_steps(board: WatchedPage) -> None:
    """31.6: Reset then Step without touching the form sends a valid action (the schema's
    example: cell 4); Enter in a field steps, as upstream's playground does."""
    page = board.page
    expect(page.locator('#pg-fields [name="cell"]')).to_have_value("4")
    page.click("#pg-reset")
    expect(page.locator("#pg-actions button")).to_have_count(9, timeout=TIMEOUT_MS)
    page.click("#pg-step")
    expect(drawing(page).locator('td[data-cell="4"]')).to_have_text("X", timeout=TIMEOUT_MS)
    page.fill('#pg-fields [name="cell"]', "7")
    page.press('#pg-fields [name="cell"]', "Enter")
    expect(drawing(page).locator('td[data-cell="7"]')).to_have_text("O", timeout=TIMEOUT_MS)
    assert page.locator("#pg-log li.error").count() == 0


def test_the_drawing_is_isolated_from_the_page(browser: Browser) -> None:
    """SECURITY.md: the drawing runs no script, cannot reach the page (an opaque origin, no
    same-origin sandbox flag) and loads nothing; its own inline style applies."""
    with running(SneakyBoardEnv) as server, watched_page(browser, server.url) as watched:
        page = watched.page
        start_session(page, server)
        page.click("#pg-reset")
        cell = drawing(page).locator('td[data-cell="0"]')
        expect(cell).to_have_count(1, timeout=TIMEOUT_MS)
        frame = page.locator("#pg-drawing")
        assert frame.get_attribute("sandbox") == ""  # no allow-scripts, no allow-same-origin
        assert "Content-Security-Policy" in (frame.get_attribute("srcdoc") or "")
        inner = page.frame(url="about:srcdoc")
        assert inner is not None
        assert inner.evaluate("() => window.origin") == "null"
        assert inner.evaluate("() => document.body.dataset.ran ?? 'no'") == "no"
        assert page.title() != "taken"
        assert inner.evaluate("() => document.getElementById('beacon').naturalWidth") == 0
        assert inner.evaluate("() => getComputedStyle(document.querySelector('td')).borderTopWidth") == "1px"
        assert watched.foreign_requests == []
        assert watched.page_errors == []
        refusals = ("Blocked script execution", "Refused to load", "Content Security Policy")
        assert all(any(word in error for word in refusals) for error in watched.console_errors), watched.console_errors


def test_secret_arguments_are_masked_and_still_sent(browser: Browser) -> None:
    with running(LoginEnv) as server, watched_page(browser, server.url) as watched:
        page = watched.page
        start_session(page, server)
        fields = page.locator("#pg-fields")
        expect(fields.locator('[name="query"]')).to_have_attribute("type", "text")
        expect(fields.locator('[name="query"]')).to_have_value("weather")  # the schema's default
        expect(fields.locator('[name="retries"]')).to_have_value("1")  # required: its minimum
        for name in ("api_key", "session_token"):
            expect(fields.locator(f'[name="{name}"]')).to_have_attribute("type", "password")
        page.fill('#pg-fields [name="api_key"]', "s3cret-key")
        page.fill('#pg-fields [name="session_token"]', "tok-42")
        expect(page.locator("#pg-json")).to_have_value(re.compile('"api_key":"•••"'))
        page.click("#pg-reset")
        page.press('#pg-fields [name="query"]', "Enter")
        log = page.locator("#pg-log")
        expect(log.locator("li").first).to_contain_text("reward 1", timeout=TIMEOUT_MS)  # the real key was sent
        text = log.inner_text() + page.locator("#pg-json").input_value()
        assert "s3cret-key" not in text and "tok-42" not in text
        sent = log.locator("li.sent").first.inner_text()
        assert '"api_key":"•••"' in sent and '"session_token":"•••"' in sent and '"query":"weather"' in sent
        watched.assert_clean()


def test_reset_then_step_is_valid_from_the_start_and_log_numbers_are_whole(browser: Browser) -> None:
    """31.6: a required number without default or example starts at its minimum (PaintEnv's
    ``add``), so Reset then Step is no VALIDATION_ERROR; the 15th log line reads "15.", all of it."""
    with running(PaintEnv) as server, watched_page(browser, server.url) as watched:
        page = watched.page
        start_session(page, server)
        page.click("#pg-reset")
        log = page.locator("#pg-log li")
        page.click("#pg-step")
        expect(log.first).to_contain_text("observation  reward 0", timeout=TIMEOUT_MS)
        for _ in range(6):
            page.click("#pg-state")
        expect(log).to_have_count(17, timeout=TIMEOUT_MS)  # 3 for the reset (its "new episode" line), 2 a request after
        assert page.locator("#pg-log li.error").count() == 0
        number = page.locator("#pg-log li .n").nth(2)  # newest first: the 15th line
        expect(number).to_have_text("15.")
        box, shown = number.bounding_box(), page.locator("#pg-log").bounding_box()
        assert box is not None and shown is not None
        assert box["x"] >= shown["x"] and box["x"] + box["width"] <= shown["x"] + shown["width"]
        widths = page.evaluate(
            """() => { const n = document.querySelectorAll('#pg-log .n')[2];
                       return [n.scrollWidth, n.clientWidth]; }"""
        )
        assert widths[0] <= widths[1], widths  # nothing of it clipped
        watched.assert_clean()


def test_no_sessions_yet_is_not_said_while_the_page_is_disconnected(browser: Browser) -> None:
    with contextlib.ExitStack() as serving:
        server = serving.enter_context(running(PaintEnv))
        with watched_page(browser, server.url) as watched:
            page = watched.page
            page.goto(server.url + "/web")
            expect(page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
            expect(page.locator("#no-sessions")).to_be_visible()
            expect(page.locator("#no-feed")).to_be_hidden()
            serving.close()  # the server stops; the page stays open
            expect(page.locator("#feed-status")).not_to_have_text("live", timeout=TIMEOUT_MS)
            expect(page.locator("#no-sessions")).to_be_hidden()
            expect(page.locator("#no-feed")).to_be_visible()
            assert watched.page_errors == []


def test_the_view_route_answers_the_hooks_and_guards_its_input() -> None:
    """UI-10 over HTTP: the hooks' answer for an observation frame's data; nothing for an env
    without hooks (no environment built); 422 for a body that is no observation data; a hook
    that raises is a 500 without a traceback."""
    with running(BoardEnv) as server, httpx.Client(base_url=server.url, trust_env=False) as http:
        data = {
            "observation": {"board": ["X", "", "", "", "", "", "", "", ""], "turn": "O"},
            "reward": 0.0,
            "done": False,
        }
        view = http.post("/web/view", json=data).json()
        assert '<td class="cell" data-cell="0">X</td>' in view["html"]
        assert [a["label"] for a in view["actions"]][:2] == ["play 1", "play 2"]
        assert view["actions"][0]["action"] == {"cell": 1}
        done = http.post("/web/view", json={**data, "done": True}).json()
        assert done["actions"] == []  # no moves once the episode is over
        assert http.post("/web/view", json={"nope": 1}).status_code == 422
        broken = http.post("/web/view", json={"observation": {}, "reward": None, "done": False})
        assert broken.status_code == 500 and "Traceback" not in broken.text
        assert (
            http.post("/web/view", content=json.dumps(data), headers={"Content-Type": "text/plain"}).status_code == 415
        )
    with running(PaintEnv) as server:
        view = httpx.post(server.url + "/web/view", json={"observation": {"total": 1}}, trust_env=False).json()
        assert view == {"html": None, "actions": []}
    with running(BoardEnv, token="operator-" + "o" * 24) as server:  # guarded like /schema (SEC-TOKEN-1)
        assert httpx.post(server.url + "/web/view", json={"observation": {}}, trust_env=False).status_code == 401


def test_the_readme_hooks_example_draws_and_offers_actions() -> None:
    """The user guide's example of the two hooks (docs/dashboard.md) does what the guide says."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "dashboard.md").read_text(encoding="utf-8")
    (source,) = [block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "def render_web" in block]
    namespace: dict[str, Any] = {}
    exec(compile(source, "docs/dashboard.md", "exec"), namespace)
    board = namespace["Board"]()
    assert has_web_hooks(board)
    view = web_view(board, {"observation": {"cells": ["X", "", "O"]}, "reward": 0.0, "done": False})
    assert view == {
        "html": "<table><td>X</td><td></td><td>O</td></table>",
        "actions": [{"label": "play 1", "action": {"cell": 1}}],
    }


def test_hooks_that_break_their_promise_are_type_errors() -> None:
    class Careless(Environment):
        def render_web(self, observation: Mapping[str, Any]) -> Any:
            return 42

        def web_actions(self, observation: Mapping[str, Any]) -> Any:
            return [("go", "not an action")]

    data = {"observation": {}, "reward": None, "done": False}
    with pytest.raises(TypeError, match="render_web\\(\\) must return a string or None, not int"):
        web_view(Careless(), data)
    Careless.render_web = lambda self, observation: None  # type: ignore[method-assign]
    with pytest.raises(TypeError, match="web_actions\\(\\) item 0 must be a \\(label, action object\\) pair"):
        web_view(Careless(), data)
    assert not has_web_hooks(PaintEnv) and has_web_hooks(BoardEnv)


def test_the_adapter_passes_an_upstream_envs_hooks_and_only_its_own() -> None:
    """An openenv-core environment's ``render_web``/``web_actions`` reach the playground
    through the adapter; one without them has none (not even a base class's defaults)."""
    from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv
    from tests.envs.adapter_samples import EchoEnv as UpstreamEchoEnv
    from tests.peer_side.upstream_board_env import StripEnvironment

    strip = OpenEnvCoreEnv.wrap(StripEnvironment)()
    assert has_web_hooks(strip) and not has_web_hooks(OpenEnvCoreEnv.wrap(UpstreamEchoEnv))
    view = web_view(strip, {"observation": {"cells": ["#", "", ""]}, "reward": 1.0, "done": False})
    assert view["actions"] == [{"label": "mark 1", "action": {"cell": 1}}, {"label": "mark 2", "action": {"cell": 2}}]
    assert view["html"] is not None and 'data-cell="0">#<' in view["html"]
