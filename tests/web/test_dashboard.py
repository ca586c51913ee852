"""The ``/web`` dashboard in a real browser (PROTOCOL.md UI-7 to UI-9).

A real server on loopback, our client driving sessions, headless Chromium showing the page;
every test also checks that the page logged no error and asked nothing of another origin.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from openenv_anyio import EnvClient
from openenv_anyio.server import RunningServer
from tests.browser import WatchedPage, watched_page
from tests.server.conftest import running

from .conftest import PaintEnv

TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running(PaintEnv) as running_server:
        yield running_server


@pytest.fixture
def dashboard(browser: Browser, server: RunningServer) -> Iterator[WatchedPage]:
    with watched_page(browser, server.url) as watched:
        watched.page.goto(server.url + "/web")
        expect(watched.page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
        yield watched
        watched.assert_clean()


def row_of(dashboard: WatchedPage, session_id: str):
    return dashboard.page.locator(f'#sessions tbody tr[data-session="{session_id}"]')


def test_the_page_lists_sessions_and_follows_them_live(dashboard: WatchedPage, server: RunningServer) -> None:
    page = dashboard.page
    expect(page.locator("#env-name")).to_have_text("PaintEnv", timeout=TIMEOUT_MS)
    with EnvClient(server.url).sync() as env:
        env.reset()
        for add in (1, 2, 3):
            env.step({"add": add})
        session_id = env.client.session_id
        assert session_id is not None
        row = row_of(dashboard, session_id)
        expect(row.locator("td.steps")).to_have_text("3", timeout=TIMEOUT_MS)
        expect(row.locator("td.return")).to_have_text("6", timeout=TIMEOUT_MS)
        expect(row.locator(".state")).to_have_text("idle")
        expect(row.locator("td.age")).to_have_text(re.compile(r"^\d+ s$"))
        env.step({"add": 4})
        expect(row.locator("td.steps")).to_have_text("4", timeout=TIMEOUT_MS)
        expect(row.locator("td.return")).to_have_text("10", timeout=TIMEOUT_MS)
    expect(row).to_have_count(0, timeout=TIMEOUT_MS)  # UI-8: the session ended


def test_a_selected_session_shows_its_curve_image_and_observation(
    dashboard: WatchedPage, server: RunningServer
) -> None:
    page = dashboard.page
    with EnvClient(server.url).sync() as env:
        env.reset()
        env.step({"add": 5})
        env.reset()
        for add in (1, 1):
            env.step({"add": add})
        assert env.client.session_id is not None
        row = row_of(dashboard, env.client.session_id)
        expect(row.locator("td.steps")).to_have_text("2", timeout=TIMEOUT_MS)
        row.click()
        expect(page.locator("#detail")).to_be_visible()
        expect(page.locator("#curve-label")).to_have_text("2 steps, return 2")
        assert page.locator("#returns-chart rect.bar").count() == 2  # the first episode, and this one
        expect(page.locator("#frame-figure")).to_be_visible()
        corners = page.evaluate(
            """() => { const c = document.getElementById('frame').getContext('2d');
                       return [Array.from(c.getImageData(0, 0, 1, 1).data),
                               Array.from(c.getImageData(2, 1, 1, 1).data)]; }"""
        )
        assert corners == [[255, 0, 0, 255], [0, 0, 255, 255]]
        tree = page.locator("#observation")
        expect(tree).to_contain_text("total")
        expect(tree).to_contain_text("image 2 × 3 × 3")
        expect(tree).to_contain_text('"<b>not html</b>"')  # text, never markup
        assert page.locator("#observation b").count() == 0


def test_the_playground_steps_the_env_with_a_generated_form(dashboard: WatchedPage) -> None:
    page = dashboard.page
    page.click("#pg-start")
    expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)
    for name in ("add", "colour", "loud", "text"):
        expect(page.locator(f'#pg-fields [name="{name}"]')).to_have_count(1)
    page.click("#pg-reset")
    log = page.locator("#pg-log li")
    expect(log.first).to_contain_text("observation", timeout=TIMEOUT_MS)
    page.fill('#pg-fields [name="add"]', "7")
    page.select_option('#pg-fields [name="colour"]', label='"blue"')
    page.check('#pg-fields [name="loud"]')
    page.fill('#pg-fields [name="text"]', "hello")
    expect(page.locator("#pg-json")).to_have_value(re.compile(r'"add":7'))
    page.click("#pg-step")
    expect(log.first).to_contain_text("reward 7", timeout=TIMEOUT_MS)
    reply = log.first.locator("details")
    reply.locator("summary").click()
    expect(reply).to_contain_text('"colour": "blue"')
    expect(reply).to_contain_text('"note": "hello"')
    page.click("#pg-state")
    expect(log.first).to_contain_text("steps 1", timeout=TIMEOUT_MS)
    page.click("#pg-end")
    expect(page.locator("#pg-status")).to_contain_text("session ended (1000", timeout=TIMEOUT_MS)


def test_a_bad_action_shows_the_validation_error_and_its_pointer(dashboard: WatchedPage) -> None:
    page = dashboard.page
    page.click("#pg-start")
    expect(page.locator("#pg-status")).to_contain_text("session open", timeout=TIMEOUT_MS)
    page.click("#pg-reset")
    page.fill('#pg-fields [name="add"]', "99")  # above the schema's maximum
    page.click("#pg-step")
    # Each answer is waited for by the count of errors shown (the newest is first): a check
    # of the first one's text alone would pass on the previous answer, and a later step's
    # own error could then land above the server's late answer to this one.
    errors = page.locator("#pg-log li.error")
    expect(errors).to_have_count(1, timeout=TIMEOUT_MS)
    expect(errors.first).to_contain_text("VALIDATION_ERROR")
    expect(errors.first).to_contain_text("(at /data/add)")
    page.check("#pg-use-json")
    page.fill("#pg-json", '{"add": 1, "extra": true}')
    page.click("#pg-step")
    expect(errors).to_have_count(2, timeout=TIMEOUT_MS)
    expect(errors.first).to_contain_text("VALIDATION_ERROR")
    expect(errors.first).to_contain_text("(at /data")
    page.fill("#pg-json", "{not json")
    page.click("#pg-step")
    expect(errors).to_have_count(3, timeout=TIMEOUT_MS)
    expect(errors.first).to_contain_text("the action is not JSON")


def test_the_page_is_served_with_a_same_origin_policy(server: RunningServer) -> None:
    response = httpx.get(server.url + "/web/", trust_env=False)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "connect-src 'self'" in policy and "script-src 'self'" in policy
    assert httpx.get(server.url + "/web/../app.py", trust_env=False).status_code == 404
    assert httpx.get(server.url + "/web", trust_env=False, follow_redirects=False).status_code in (301, 302)


def test_no_web_turns_the_page_off() -> None:
    with running(PaintEnv, web=False) as quiet:
        assert httpx.get(quiet.url + "/web/", trust_env=False).status_code == 404


def test_with_a_token_the_page_asks_for_it_and_shows_what_it_grants(browser: Browser) -> None:
    """SEC-TOKEN-1, SEC-TOKEN-2, SEC-UI-1: the page learns from /access that it needs a
    token, keeps it in the tab (never in a URL), and tells an operator token from an agent
    token, with no refused request in the console."""
    operator, agent = "operator-" + "o" * 24, "agent-" + "a" * 24
    with running(PaintEnv, token=operator, agent_tokens=(agent,)) as server:
        with EnvClient(server.url, token=operator).sync() as env:
            env.reset()
            env.step({"add": 2})
            for token, grant in ((operator, "operator token"), (agent, "agent token")):
                with watched_page(browser, server.url) as watched:
                    page = watched.page
                    urls: list[str] = []
                    page.on("request", lambda request: urls.append(request.url))
                    page.on("websocket", lambda socket: urls.append(socket.url))
                    page.goto(server.url + "/web/")
                    expect(page.locator("#token-form")).to_be_visible(timeout=TIMEOUT_MS)
                    expect(page.locator("#feed-status")).to_have_text("token needed")
                    page.fill("#token-input", token)
                    page.click("#token-form button")
                    expect(page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT_MS)
                    expect(page.locator("#grant")).to_contain_text(grant, timeout=TIMEOUT_MS)
                    assert env.client.session_id is not None
                    row = row_of(watched, env.client.session_id)
                    expect(row.locator("td.steps")).to_have_text("1", timeout=TIMEOUT_MS)
                    row.click()
                    tree = page.locator("#observation")
                    if token == operator:
                        expect(tree).to_contain_text("total")
                    else:
                        expect(tree).to_contain_text("not shown to this page's token")
                    assert not any(token in url for url in urls), urls
                    watched.assert_clean()  # asking /access first, the page provokes no 401 or 403
