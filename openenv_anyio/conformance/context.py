"""What a case gets to work with (:class:`CaseContext`) and the checks cases share.

The checks raise :class:`~.verdicts.CaseFailed` with a message that says what the server
did instead; the runner turns the message and the case's wire log into the verdict.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from ..core import AFFINITY_HEADER, new_affinity_key, spec_validator
from .driver import HttpProbe, ServerClosed, Target, WsConnection, open_ws
from .evidence import Received, Recorder
from .verdicts import CaseFailed, NotApplicable

__all__ = [
    "CaseContext",
    "CheckOptions",
    "Setup",
    "check_data_shape",
    "expect_alive",
    "expect_error",
    "expect_frame",
    "expect_observation",
    "expect_state",
]


DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """What to check and how: the server URL plus the knobs of ``openenv-anyio check``."""

    url: str
    action: Mapping[str, Any] | None = None
    only: Sequence[str] | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    frame_limit_mb: float | None = None  # the server's inbound limit (WS-ERR-08)
    max_sessions: int | None = None  # the server's session limit (WS-CAP-01)
    examples_dir: Path | None = None  # spec example vectors (SPEC-VEC-01); default: the bundled spec
    strict: bool = False  # members the spec does not name make a case non-strict, not just a note (COMPAT-5)
    token: str | None = field(default=None, repr=False)  # bearer token (SEC-TOKEN-1); in no report
    validation_token: str | None = field(default=None, repr=False)  # the server's (VAL-OPEN-1); in no report
    #: a shell command that restarts the server under test (EXT-HAND-01); None: that case is not exercised
    restart_command: str | None = None
    restart_timeout_s: float = 60.0  # bounds the command, then the server's taking the session back


@dataclass(frozen=True, slots=True)
class Setup:
    """The options plus what the runner learnt before the cases: schemas, a valid action."""

    options: CheckOptions
    target: Target
    schema: Mapping[str, Any] | None = None
    schema_problem: str | None = None
    action: Mapping[str, Any] | None = None
    action_source: str = "none"  # "option", "schema" or "none"
    action_problem: str | None = None
    invalid_action: Mapping[str, Any] | None = None

    @property
    def timeout_s(self) -> float:
        return self.options.timeout_s

    @property
    def frame_limit_bytes(self) -> int | None:
        limit = self.options.frame_limit_mb
        return None if limit is None else int(limit * 2**20)

    @property
    def max_sessions(self) -> int | None:
        return self.options.max_sessions


@dataclass(slots=True)
class CaseContext:
    """Per-case access to the server (recorded) plus the case's non-strict marks and notes.

    Every WebSocket a case opens carries the case's own ``OpenEnv-Affinity`` key
    (``EXT-AFF-1``): behind a balancer that hashes on it (``deploy/``), a case's sessions,
    their resumes and the dashboard that watches them reach one server, so a fleet's
    verdicts are those of one of its servers, run after run.
    """

    setup: Setup
    recorder: Recorder
    http: HttpProbe
    notes: list[str] = field(default_factory=list)
    non_strict_reasons: list[str] = field(default_factory=list)
    informational: bool = False
    affinity_key: str = field(default_factory=new_affinity_key)

    @contextlib.asynccontextmanager
    async def ws(
        self, path: str = "/ws", *, subprotocols: Sequence[str] = (), headers: Sequence[tuple[str, str]] = ()
    ) -> AsyncIterator[WsConnection]:
        async with open_ws(
            self.setup.target,
            self.recorder,
            path,
            connect_timeout=self.setup.timeout_s,
            subprotocols=subprotocols,
            headers=((AFFINITY_HEADER, self.affinity_key), *headers),
        ) as conn:
            yield conn

    @property
    def wait_s(self) -> float:
        """How long to wait for something that may legitimately never come."""
        return max(0.2, self.setup.timeout_s / 2)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def non_strict(self, text: str) -> None:
        self.non_strict_reasons.append(text)

    def inform(self, text: str) -> None:
        self.informational = True
        self.notes.append(text)

    def require_action(self) -> Mapping[str, Any]:
        if self.setup.action is None:
            raise NotApplicable(self.setup.action_problem or "no valid action is known; pass --action")
        return self.setup.action


def expect_frame(frame: Received, frame_type: str, what: str) -> Mapping[str, Any]:
    """The ``data`` of ``frame`` if it is a spec-valid frame of ``frame_type``."""
    if frame.type != frame_type:
        article = "an" if frame_type[0] in "aeiou" else "a"
        raise CaseFailed(f"{what}: expected {article} {frame_type} frame, got {frame.describe()}")
    if frame.faults:
        raise CaseFailed(f"{what}: the {frame_type} frame breaks the spec at {frame.faults[0]}")
    data: Mapping[str, Any] = frame.data
    return data


def expect_error(frame: Received, code: str, what: str) -> Mapping[str, Any]:
    """The ``data`` of ``frame`` if it is a valid error frame carrying ``code``."""
    if frame.type != "error":
        raise CaseFailed(f"{what}: expected an error frame with code {code}, got {frame.describe()}")
    data = expect_frame(frame, "error", what)
    if data.get("code") != code:
        raise CaseFailed(f"{what}: expected code {code}, got {data.get('code')} ({data.get('message')!r})")
    return data


async def expect_observation(conn: WsConnection, request: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    return expect_frame(await conn.request(request), "observation", what)


async def expect_state(conn: WsConnection, what: str) -> Mapping[str, Any]:
    return expect_frame(await conn.request({"type": "state"}), "state", what)


async def expect_alive(conn: WsConnection, after: str, episode_id: str | None = None) -> None:
    """The session still answers ``state`` (and still has ``episode_id``) after ``after``."""
    try:
        data = await expect_state(conn, f"state after {after}")
    except ServerClosed as closed:
        raise CaseFailed(f"the session did not survive {after}: {closed}") from None
    if episode_id is not None and data.get("episode_id") != episode_id:
        raise CaseFailed(
            f"after {after} the session lost its episode: episode_id {data.get('episode_id')!r}, "
            f"expected {episode_id!r}"
        )


def check_data_shape(frame_type: str, data: Any, what: str) -> None:
    """Check an HTTP body against the ``data`` of a ``frame_type`` frame of the spec."""
    validator = spec_validator("server-frame.json")
    frame = {"type": frame_type, "data": data}
    if validator.is_valid(frame):
        return
    faults = validator.faults(frame)
    first = faults[0] if faults else None
    where = (first.pointer.removeprefix("/data") or "/") if first else "/"
    detail = f"{first.keyword}: {first.message}" if first else "does not match"
    raise CaseFailed(f"{what}: the body breaks the {frame_type} data schema at {where}: {detail}")


async def receive_within(conn: WsConnection, seconds: float) -> Received | None:
    """The next frame, or None when none arrives within ``seconds``."""
    with trio.move_on_after(seconds):
        return await conn.receive()
    return None
