"""An environment written against upstream OpenEnv (any release of ``tests/upstream_peers``),
in the style of openenv 0.10's web hooks: a three-cell strip on which each step marks one cell;
``render_web`` draws the strip, ``web_actions`` offers the free cells. Served by our server
through the adapter (``openenv-anyio serve upstream_board_env:StripEnvironment``) in the
peer's venv, for the dashboard tests of ``tests/interop/test_web_hooks.py``.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class MarkAction(Action):
    cell: int


class StripObservation(Observation):
    cells: list[str]


class StripEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        self._cells = ["", "", ""]
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, episode_id: str | None = None, **kwargs: Any) -> StripObservation:
        self._cells = ["", "", ""]
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return StripObservation(cells=list(self._cells), done=False, reward=0.0)

    def step(self, action: MarkAction) -> StripObservation:  # type: ignore[override]
        self._cells[action.cell] = "#"
        self._state.step_count += 1
        return StripObservation(cells=list(self._cells), done=all(self._cells), reward=1.0)

    @property
    def state(self) -> State:
        return self._state

    def render_web(self, observation: dict[str, Any]) -> str | None:
        cells = "".join(
            f'<span class="cell" data-cell="{i}">{mark or "."}</span>' for i, mark in enumerate(observation["cells"])
        )
        return f'<p id="strip">{cells}</p>'

    def web_actions(self, observation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        return [(f"mark {i}", {"cell": i}) for i, mark in enumerate(observation["cells"]) if not mark]
