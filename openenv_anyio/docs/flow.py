"""The message flow of one session, drawn at the top of the reference as a sequence diagram.

The flow is a list of phases (opening, an episode, tools, a resume, the goodbye); each phase
is a list of steps between three parties: the agent on ``/ws``, the server, a dashboard on
``/ws/ui``. A step either carries a frame (named by its entry point and ``type``, and linked
to that frame's section) or is a WebSocket event that is no frame (an opening handshake, a
close code, a lost link). :func:`check_flow` holds the flow to the spec: every frame type
of every entry point appears in it, and it names no frame type the spec lacks, so a new
frame type cannot enter the spec without a place in the diagram.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import DocsError

__all__ = ["FLOW", "Party", "Phase", "Step", "check_flow"]


class Party(enum.Enum):
    """A lifeline of the diagram, left to right."""

    AGENT = "Agent (/ws)"
    SERVER = "Server"
    DASHBOARD = "Dashboard (/ws/ui)"


@dataclass(frozen=True, slots=True)
class Step:
    """One arrow (``sender`` to ``receiver``), or a note on the agent's and server's lifelines
    when ``sender is receiver``."""

    sender: Party
    receiver: Party
    rule: str  # the requirement ID of PROTOCOL.md that says so
    frame: tuple[str, str] | None = None  # (entry point, frame type) of the frame it carries
    detail: str = ""  # after the frame type: the members that matter here; or the event itself


@dataclass(frozen=True, slots=True)
class Phase:
    title: str
    steps: tuple[Step, ...]


_A, _S, _D = Party.AGENT, Party.SERVER, Party.DASHBOARD
_C, _R, _U = "client-frame", "server-frame", "ui-frame"

FLOW: tuple[Phase, ...] = (
    Phase(
        "Open",
        (
            Step(_D, _S, "UI-1", detail="open /ws/ui?dashboard=1"),
            Step(_A, _S, "EXT-NEG-1", detail="open /ws (may offer openenv-anyio.v1)"),
            Step(_S, _A, "EXT-SES-1", (_R, "session"), "session_id, resume_token (negotiated)"),
        ),
    ),
    Phase(
        "Episode",
        (
            Step(_A, _S, "WS-RESET-1", (_C, "reset"), '{"seed": 7}'),
            Step(_S, _A, "WS-OBS-1", (_R, "observation"), "observation, reward, done"),
            Step(_S, _D, "UI-2", (_U, "state_update"), "episode_state"),
            Step(_A, _S, "WS-STEP-1", (_C, "step"), "an action (repeat until done)"),
            Step(_S, _A, "WS-OBS-1", (_R, "observation"), "observation, reward, done"),
            Step(_S, _D, "UI-2", (_U, "state_update"), "after every reset and step"),
            Step(_A, _S, "WS-STATE-1", (_C, "state")),
            Step(_S, _A, "WS-STATE-1", (_R, "state"), "episode_id, step_count"),
            Step(_A, _S, "WS-STEP-2", (_C, "step"), "an action the env rejects"),
            Step(_S, _A, "WS-STEP-2", (_R, "error"), "VALIDATION_ERROR; the session goes on"),
        ),
    ),
    Phase(
        "Tools (optional)",
        (
            Step(_A, _S, "MCP-WS-1", (_C, "mcp"), "JSON-RPC tools/list or tools/call"),
            Step(_S, _A, "MCP-WS-1", (_R, "mcp"), "the JSON-RPC response"),
        ),
    ),
    Phase(
        "Validation telemetry (extension, base sessions, before the first reset)",
        (
            Step(_A, _S, "VAL-OPEN-1", (_C, "validation_open"), "the validation token"),
            Step(_S, _A, "VAL-OPEN-1", (_R, "validation_open"), "a capability; now recorded"),
            Step(_A, _S, "VAL-READ-1", (_C, "validation_read"), "the capability"),
            Step(_S, _A, "VAL-READ-1", (_R, "validation"), "seed report, trajectory"),
        ),
    ),
    Phase(
        "Resume (extension, negotiated sessions)",
        (
            Step(_A, _A, "EXT-RES-2", detail="link lost: session kept for resume_grace_s"),
            Step(_A, _S, "EXT-RES-1", detail="open /ws with OpenEnv-Resume-Token"),
            Step(_S, _A, "EXT-RES-1", (_R, "session"), '{"resumed": true}'),
            Step(_A, _S, "EXT-REQ-1", (_C, "step"), "the same request_id again"),
            Step(_S, _A, "EXT-REQ-1", (_R, "observation"), "the stored answer; no second run"),
        ),
    ),
    Phase(
        "Goodbye",
        (
            Step(_A, _S, "WS-CLOSE-1", (_C, "close")),
            Step(_S, _A, "WS-CLOSE-1", detail="WebSocket close 1000 (no frame)"),
            Step(_S, _D, "UI-8", (_U, "session_closed"), '{"reason": "closed"}'),
        ),
    ),
)


def check_flow(flow: Iterable[Phase], frame_types: Iterable[tuple[str, str]]) -> None:
    """Raise :class:`DocsError` unless ``flow`` shows exactly the spec's (entry, type) pairs."""
    spec_types = list(frame_types)
    shown = {step.frame for phase in flow for step in phase.steps if step.frame is not None}
    unknown = sorted(shown - set(spec_types))
    if unknown:
        entry, frame_type = unknown[0]
        raise DocsError(
            f"the message flow (openenv_anyio/docs/flow.py) shows {entry} type {frame_type!r}, "
            "which the spec does not define"
        )
    missing = [pair for pair in spec_types if pair not in shown]
    if missing:
        entry, frame_type = missing[0]
        raise DocsError(
            f"{entry} type {frame_type!r} is missing from the message flow (openenv_anyio/docs/flow.py): "
            "give it a step there"
        )
