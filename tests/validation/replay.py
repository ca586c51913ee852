"""A plan replayed over raw WebSocket frames, as upstream's runtime collector replays one:
reset with a seed and an episode id, then each action followed by a state request; every
answer is kept as the exact text the server sent."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.sync.client import ClientConnection, connect

from openenv_anyio.server import RunningServer

TIMEOUT = 30.0  # a bound on a wait, never a speed claim: a loaded machine starts processes slowly


@dataclass(frozen=True)
class Plan:
    """What one replay sends: the reset's data and the actions, each followed by ``state``."""

    reset: Mapping[str, Any]
    actions: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    def frames(self) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = [{"type": "reset", "data": dict(self.reset)}, {"type": "state"}]
        for action in self.actions:
            sent += [{"type": "step", "data": dict(action)}, {"type": "state"}]
        return sent


def ws_url(server: RunningServer) -> str:
    return "ws" + server.url.removeprefix("http") + "/ws"


def exchange(ws: ClientConnection, frame: Mapping[str, Any] | str) -> str:
    """Send one frame, return the text of its answer exactly as it came."""
    ws.send(frame if isinstance(frame, str) else json.dumps(frame))
    text = ws.recv(timeout=TIMEOUT)
    assert isinstance(text, str)
    return text


def replay_on(ws: ClientConnection, plan: Plan) -> list[str]:
    """The answers to ``plan``'s frames on an open connection."""
    return [exchange(ws, frame) for frame in plan.frames()]


def replay(server: RunningServer, plan: Plan) -> list[str]:
    """The answers to ``plan`` in a fresh session of ``server``."""
    with connect(ws_url(server), open_timeout=TIMEOUT, close_timeout=TIMEOUT) as ws:
        return replay_on(ws, plan)
