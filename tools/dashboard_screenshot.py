"""Make ``docs/dashboard.png``, the README's picture of the ``/web`` dashboard.

Serves Gymnasium's CartPole with ``render_mode="rgb_array"`` on a loopback port, runs three
agents (our client, trio backend) that balance the pole, opens the dashboard in headless
Chromium, selects a session, steps the playground once, and saves a screenshot:

    .venv/bin/python tools/dashboard_screenshot.py [--out docs/dashboard.png]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
for name, value in (("SDL_VIDEODRIVER", "dummy"), ("SDL_AUDIODRIVER", "dummy"), ("PYGAME_HIDE_SUPPORT_PROMPT", "1")):
    os.environ.setdefault(name, value)

import anyio  # noqa: E402

from openenv_anyio import EnvClient  # noqa: E402
from openenv_anyio.envs.gymnasium import GymnasiumEnv  # noqa: E402
from openenv_anyio.server import EnvServer, ServerConfig  # noqa: E402
from tests.browser import open_browser, watched_page  # noqa: E402


async def balance(url: str, seed: int, stop: threading.Event) -> None:
    """Push the cart toward the side the pole leans, a little slower than it could."""
    async with EnvClient(url) as env:
        episode = 0
        while not stop.is_set():
            result = await env.reset(seed=seed + episode)
            episode += 1
            steps = 0
            while not result.done and not stop.is_set() and steps < 200:
                angle, velocity = result.observation["observation"][2:4]
                result = await env.step({"action": int(angle + 0.5 * velocity > 0)})
                steps += 1
                await anyio.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png", help="where to write the PNG")
    args = parser.parse_args()
    factory = GymnasiumEnv.bind("CartPole-v1", render_mode="rgb_array")
    stop = threading.Event()
    with EnvServer(factory, ServerConfig(port=0)).run_in_thread() as server:
        agents = [
            threading.Thread(target=anyio.run, args=(balance, server.url, seed, stop), kwargs={"backend": "trio"})
            for seed in (1, 2, 3)
        ]
        for agent in agents:
            agent.start()
        try:
            with open_browser() as browser, watched_page(browser, server.url) as watched:
                page = watched.page
                page.goto(server.url + "/web/")
                page.wait_for_selector("#sessions tbody tr:nth-child(3)", timeout=20_000)
                page.wait_for_function("document.querySelectorAll('#sessions td.steps')[0].textContent > '5'")
                page.click("#pg-start")
                page.wait_for_selector("#pg-reset:not([disabled])")
                page.click("#pg-reset")
                page.fill('#pg-fields [name="action"]', "1")
                page.click("#pg-step")
                page.wait_for_selector("#pg-log li:nth-child(4)")
                page.click("#sessions tbody tr:nth-child(1)")
                page.wait_for_selector("#frame-img:not([hidden])")
                page.wait_for_timeout(1500)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out), full_page=True)
                watched.assert_clean()
        finally:
            stop.set()
            for agent in agents:
                agent.join(timeout=10)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
