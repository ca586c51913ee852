"""A minimal protocol-v1 echo server written as a raw ASGI app (Hypercorn, trio), with
switchable flaws: the correct baseline for the kit, and the deliberately broken servers
each case must catch.

It stands on the project's core only (frame decoding, validation, encoding).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from openenv_anyio.core import (
    Close,
    Error,
    ErrorCode,
    Mcp,
    Observation,
    ProtocolError,
    Reset,
    State,
    StateRequest,
    StateUpdate,
    Step,
    ValidationOpen,
    ValidationRead,
    Validator,
    decode_client_frame,
    dumps,
    encode_frame,
)

from .trio_thread import trio_server_in_thread

ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}
SCHEMAS = {
    "action": ACTION_SCHEMA,
    "observation": {"type": "object"},
    "reset_observation": {"type": "object"},
    "state": {"type": "object", "properties": {"episode_id": {}, "step_count": {"type": "integer"}}},
}
METADATA = {"name": "MinimalEcho", "description": "echoes the message", "version": "1.0.0"}
FRAME_LIMIT_BYTES = 2**20  # the test servers' inbound limit (1 MiB), so WS-ERR-08 stays cheap


@dataclass(frozen=True)
class Flaws:
    """Deliberate protocol violations (all off: a correct server)."""

    wrong_reply_type: bool = False  # step answered with a state frame
    missing_done: bool = False  # observation frames lack `done`
    out_of_order: bool = False  # reset/step answered late, after later state requests
    shared_state: bool = False  # one environment for every connection
    crash_on_invalid_json: bool = False  # the handler dies on a text frame that is not JSON
    ignore_state: bool = False  # never answers `state`
    close_code: int = 1000  # the code used after `close`
    binary_closes: bool = False  # a binary frame closes the connection silently
    future_member: bool = False  # observation data carries a member v1 does not name (not a flaw: COMPAT-1)
    #: after this many /ws connections, nothing is answered any more, HTTP included (connections
    #: are still accepted): what openenv-core 0.3.0's template server does after ~11 sessions
    stops_answering_after: int | None = None


@dataclass
class EchoEnv:
    episode_id: str | None = None
    step_count: int = 0
    last: dict[str, Any] | None = None
    counter: Iterator[int] = field(default_factory=itertools.count)

    def reset(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.episode_id = kwargs.get("episode_id") or f"episode-{next(self.counter)}"
        self.step_count = 0
        self.last = {"echoed": ""}
        return self.last

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.step_count += 1
        self.last = {"echoed": action["message"]}
        return self.last

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count}


class MinimalServer:
    """The ASGI app."""

    def __init__(self, flaws: Flaws = Flaws(), *, max_sessions: int | None = None) -> None:
        self.flaws = flaws
        self.max_sessions = max_sessions
        self.shared_env = EchoEnv()
        self.action_validator = Validator(ACTION_SCHEMA)
        self.sessions: dict[int, EchoEnv] = {}
        self.subscribers: set[trio.MemorySendChannel[str]] = set()
        self._ids = itertools.count(1)
        self.ws_connections = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        limit = self.flaws.stops_answering_after
        if scope["type"] in ("http", "websocket") and limit is not None and self.ws_connections >= limit:
            await trio.sleep_forever()  # wedged: the request is read by the server, never answered
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            self.ws_connections += 1
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        elif scope["type"] == "websocket":
            await receive()  # websocket.connect
            if scope["path"] == "/ws":
                await self.agent(receive, send)
            elif scope["path"] == "/ws/ui":
                await self.ui(receive, send)
            else:
                await send({"type": "websocket.close", "code": 1000})
        elif scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})

    # --- HTTP ----------------------------------------------------------------------------

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, answer = self.route(scope["method"], scope["path"], body)
        payload = dumps(answer).encode()
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": payload})

    def route(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        env = EchoEnv()
        if (method, path) == ("GET", "/health"):
            return 200, {"status": "healthy"}
        if (method, path) == ("GET", "/metadata"):
            return 200, METADATA
        if (method, path) == ("GET", "/schema"):
            return 200, SCHEMAS
        if (method, path) == ("GET", "/state"):
            return 200, env.state()
        if (method, path) == ("POST", "/reset"):
            return 200, self.observation(env.reset({})).to_wire()["data"]
        if (method, path) == ("POST", "/step"):
            action = json.loads(body or b"{}").get("action")
            try:
                self.action_validator.check(action, what="action")
            except ProtocolError as exc:
                return 422, {"detail": exc.errors}
            return 200, self.observation(env.step(action)).to_wire()["data"]
        return 404, {"detail": "Not Found"}

    # --- /ws -----------------------------------------------------------------------------

    def observation(self, fields: dict[str, Any]) -> Observation:
        return Observation(fields, reward=float(len(fields.get("echoed", ""))), done=False)

    def encode_observation(self, fields: dict[str, Any]) -> str:
        wire = self.observation(fields).to_wire()
        if self.flaws.missing_done:
            del wire["data"]["done"]
        if self.flaws.future_member:
            wire["data"]["later"] = {"from": "a future release"}
        return dumps(wire)

    async def agent(self, receive: Any, send: Any) -> None:
        await send({"type": "websocket.accept"})
        if self.max_sessions is not None and len(self.sessions) >= self.max_sessions:
            extra = {"active_sessions": len(self.sessions), "max_sessions": self.max_sessions}
            full = Error("CAPACITY_REACHED", "Server at capacity", extra)
            await send({"type": "websocket.send", "text": encode_frame(full)})
            await send({"type": "websocket.close", "code": 1013})
            return
        session = next(self._ids)
        env = self.shared_env if self.flaws.shared_state else EchoEnv()
        self.sessions[session] = env
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    payload = message.get("text") if message.get("text") is not None else message.get("bytes", b"")
                    if isinstance(payload, bytes) and self.flaws.binary_closes:
                        await send({"type": "websocket.close", "code": 1000})
                        return
                    reply = await self.answer(env, payload)
                    if reply is None:
                        continue
                    if reply == "close":
                        await send({"type": "websocket.close", "code": self.flaws.close_code})
                        return
                    delayed = self.flaws.out_of_order and not reply.startswith('{"type":"state"')
                    if delayed:
                        nursery.start_soon(self.send_later, send, reply)
                    else:
                        await send({"type": "websocket.send", "text": reply})
                    self.publish(session, env)
        finally:
            del self.sessions[session]

    async def send_later(self, send: Any, text: str) -> None:
        await trio.sleep(0.05)
        await send({"type": "websocket.send", "text": text})

    async def answer(self, env: EchoEnv, payload: str | bytes) -> str | None:
        try:
            frame = decode_client_frame(payload)
        except ProtocolError as exc:
            if exc.code == "INVALID_JSON" and isinstance(payload, str) and self.flaws.crash_on_invalid_json:
                raise RuntimeError("handler crashed") from exc
            return encode_frame(Error.from_protocol_error(exc))
        if isinstance(frame, Close):
            return "close"
        if isinstance(frame, StateRequest):
            return None if self.flaws.ignore_state else encode_frame(State(env.state()))
        if isinstance(frame, Reset):
            return self.encode_observation(env.reset(dict(frame.kwargs)))
        if isinstance(frame, (Mcp, ValidationOpen, ValidationRead)):  # no MCP surface (MCP-WS-0), no telemetry
            return encode_frame(Error(ErrorCode.UNKNOWN_TYPE.value, f"Unknown message type: {frame.type}"))
        assert isinstance(frame, Step)
        try:
            self.action_validator.check(frame.action, what="action")
        except ProtocolError as exc:
            return encode_frame(Error.from_protocol_error(exc))
        fields = env.step(dict(frame.action))
        if self.flaws.wrong_reply_type:
            return encode_frame(State(env.state()))
        return self.encode_observation(fields)

    # --- /ws/ui --------------------------------------------------------------------------

    def update(self, env: EchoEnv) -> str:
        return encode_frame(StateUpdate({**env.state(), "current_observation": env.last}))

    def publish(self, session: int, env: EchoEnv) -> None:
        for channel in list(self.subscribers):
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                channel.send_nowait(self.update(env))

    async def ui(self, receive: Any, send: Any) -> None:
        await send({"type": "websocket.accept"})
        sender, updates = trio.open_memory_channel[str](64)
        self.subscribers.add(sender)
        try:
            for env in list(self.sessions.values()):
                await send({"type": "websocket.send", "text": self.update(env)})
            async with trio.open_nursery() as nursery:

                async def forward() -> None:
                    async for text in updates:
                        await send({"type": "websocket.send", "text": text})

                nursery.start_soon(forward)
                while (await receive())["type"] != "websocket.disconnect":
                    pass  # read-only channel: frames from subscribers are ignored (UI-1)
                nursery.cancel_scope.cancel()
        finally:
            self.subscribers.discard(sender)


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve ``app`` with Hypercorn (trio) on 127.0.0.1 (free port) in a thread; yield its URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = 1.0
    config.websocket_max_message_size = FRAME_LIMIT_BYTES
    config.accesslog = None
    config.errorlog = None

    async def start(nursery: trio.Nursery, stop: trio.Event) -> str:
        binds = await nursery.start(
            lambda task_status: serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
        )
        return str(binds[0])

    with trio_server_in_thread(start, "minimal-server") as url:
        yield url
