"""Fixtures for the dashboard tests: one headless Chromium per module, and an env that has a
form-worthy action schema and an image in its observations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser

from openenv_anyio import Environment
from tests.browser import open_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with open_browser() as opened:
        yield opened


#: A 2 x 3 RGB image: the top-left pixel is pure red, the bottom-right pure blue.
PIXELS = [[[255, 0, 0], [0, 255, 0], [10, 20, 30]], [[40, 50, 60], [70, 80, 90], [0, 0, 255]]]


class PaintEnv(Environment):
    """Adds numbers; observations carry a small RGB frame and a label."""

    NON_BLOCKING = True
    action_schema = {
        "type": "object",
        "properties": {
            "add": {"type": "integer", "minimum": 0, "maximum": 10, "description": "how much to add"},
            "colour": {"enum": ["red", "green", "blue"]},
            "loud": {"type": "boolean"},
            "note": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        "required": ["add"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.total = 0
        self.steps = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.total = self.steps = 0
        return {"total": 0, "frame": PIXELS, "label": "<b>not html</b>", "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.total += action["add"]
        self.steps += 1
        note = action.get("note", {}).get("text", "")
        return {
            "total": self.total,
            "colour": action.get("colour"),
            "loud": action.get("loud", False),
            "note": note,
            "frame": PIXELS,
            "label": "<b>not html</b>",
            "reward": float(action["add"]),
            "done": self.total >= 100,
        }

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": self.steps}
