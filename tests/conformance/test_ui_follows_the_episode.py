"""``UI-01`` against our server for environments that ignore the ``episode_id`` given to
``reset`` (most of upstream's: they draw their own): the case follows the id the server
reports, which is the one the dashboard's updates name."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from openenv_anyio import Environment
from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync
from openenv_anyio.server import EnvServer, ServerConfig


class OwnEpisodes(Environment):
    """Names every episode itself, whatever ``reset`` is given."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"move": {"type": "integer"}},
        "required": ["move"],
    }

    def __init__(self) -> None:
        self.episode_id = str(uuid.uuid4())
        self.steps = 0

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        self.episode_id, self.steps = str(uuid.uuid4()), 0
        return {"board": []}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"board": [action["move"]], "reward": 0.0}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}


def test_ui_01_follows_the_episode_the_server_reports() -> None:
    with EnvServer(OwnEpisodes, ServerConfig()).run_in_thread() as running:
        report = run_checks_sync(CheckOptions(running.url, only=["UI-01"], timeout_s=5))
    (result,) = report.results
    assert result.verdict.value == "pass", (result.verdict, result.reason)
