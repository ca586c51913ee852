"""A real browser page on another origin tries the server (SEC-ORIGIN-1, SEC-CT-1): the
WebSockets ``/ws`` and ``/ws/ui``, and a ``text/plain`` form post to ``/step`` (the JSON a
form can smuggle). Headless Chromium, a second loopback server for the page."""

from __future__ import annotations

import base64
import threading
from typing import Any, ClassVar

import pytest
from browser import open_browser, page_server

from openenv_anyio.envs.echo import EchoEnv

from .conftest import ask, running, ws_connect


class CountingEcho(EchoEnv):
    """The echo environment, counting every step any instance takes."""

    steps: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def step(self, action: Any) -> Any:
        with CountingEcho.lock:
            CountingEcho.steps += 1
        return super().step(action)


#: Opens a WebSocket, sends one frame when it opens, and tells what happened.
PROBE = """
([url, frame, protocols]) => new Promise((resolve) => {
    const ws = new WebSocket(url, protocols || []);
    const timer = setTimeout(() => resolve("no answer"), 10000);
    ws.onopen = () => { if (frame) ws.send(frame); };
    ws.onmessage = (event) => { clearTimeout(timer); ws.close(); resolve("read: " + event.data); };
    ws.onclose = (event) => { clearTimeout(timer); resolve("closed " + event.code); };
})
"""

#: The classic cross-site JSON post: a text/plain form whose one field reads as JSON.
FORM = """<!doctype html>
<form id="f" method="POST" action="{action}" enctype="text/plain">
  <input name='{{"action": {{"message": "from a foreign page"}}, "pad": "' value='"}}'>
</form>
"""


@pytest.fixture(scope="module")
def browser():
    with open_browser() as opened:
        yield opened


def ws_base(url: str) -> str:
    return "ws" + url.removeprefix("http")


def test_a_foreign_page_can_neither_drive_nor_watch_sessions(browser) -> None:
    with running(EchoEnv) as server, page_server({"/": "<p>a page on another site</p>"}) as foreign:
        with ws_connect(server) as agent:  # a session with something to steal
            ask(agent, {"type": "reset", "data": {"episode_id": "private"}})
            ask(agent, {"type": "step", "data": {"message": "my private observation"}})
            page = browser.new_page()
            page.goto(foreign + "/")
            drive = page.evaluate(PROBE, [ws_base(server.url) + "/ws", '{"type":"reset"}'])
            watch = page.evaluate(PROBE, [ws_base(server.url) + "/ws/ui", None])
            page.close()
    assert drive == "closed 1006" and watch == "closed 1006"  # the handshake never opened


def test_an_allowed_origin_is_served_to_the_browser(browser) -> None:
    """The same page, its origin allowed: the WebSocket opens and the session answers (the
    refusal above is the Origin rule, not a browser that cannot connect)."""
    with (
        page_server({"/": "<p>the dashboard's site</p>"}) as dashboard,
        running(EchoEnv, allowed_origins=(dashboard,)) as server,
    ):
        page = browser.new_page()
        page.goto(dashboard + "/")
        drive = page.evaluate(PROBE, [ws_base(server.url) + "/ws", '{"type":"reset"}'])
        page.close()
    assert drive.startswith('read: {"type":"observation"')


def test_a_foreign_form_post_runs_nothing(browser) -> None:
    with running(CountingEcho) as server:
        with page_server({"/": FORM.format(action=server.url + "/step")}) as foreign:
            before = CountingEcho.steps
            page = browser.new_page()
            page.goto(foreign + "/")
            with page.expect_navigation() as navigation:
                page.evaluate("document.getElementById('f').submit()")
            status = navigation.value.status if navigation.value is not None else None
            page.close()
    assert status == 403
    assert CountingEcho.steps == before


def test_a_browser_sends_its_token_as_a_subprotocol_offer(browser) -> None:
    """SEC-TOKEN-1: browsers cannot set Authorization on a WebSocket; the token rides in an
    ``openenv-anyio.bearer.`` offer beside ``openenv-anyio.v1``, which the server selects."""
    token = "browser-operator-token"
    carrier = "openenv-anyio.bearer." + base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
    with (
        page_server({"/": "<p>dashboard</p>"}) as dashboard,
        running(EchoEnv, allowed_origins=(dashboard,), token=token) as server,
    ):
        with ws_connect(server, additional_headers={"Authorization": f"Bearer {token}"}) as agent:
            ask(agent, {"type": "reset", "data": {"episode_id": "watched"}})
            page = browser.new_page()
            page.goto(dashboard + "/")
            base = ws_base(server.url)
            watched = page.evaluate(PROBE, [base + "/ws/ui", None, ["openenv-anyio.v1", carrier]])
            refused = page.evaluate(PROBE, [base + "/ws/ui", None, ["openenv-anyio.v1"]])
            driven = page.evaluate(PROBE, [base + "/ws", None, ["openenv-anyio.v1", carrier]])
            page.close()
    assert watched.startswith('read: {"type":"state_update"') and '"watched"' in watched
    assert refused == "closed 1006"
    assert driven.startswith('read: {"type":"session"')
