"""Large inbound frames on a real server (``SRV-MEM-1``, ``SRV-MEM-2``): answered whole and in
order, held against the server-wide budget of bytes in flight, refused with ``SERVER_BUSY``
when no room comes within the wait (the session goes on), and never holding room after
their connection is gone."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from openenv_anyio.server import ServerConfig
from openenv_anyio.ws import FAST_FRAME_LIMIT
from tests.ops.scrape import scrape

from .conftest import TIMEOUT, ask, wait_for, ws_connect
from .test_direct_ws import RESET, EchoText, RawClient, client_frame, step_frame

MIB = 1024 * 1024
#: a frame limit of 2 MiB and a budget of one such frame: a second large frame finds no room
TIGHT = {"max_message_size_mb": 2, "max_inflight_bytes": 2 * MIB}


def large_step(char: str = "€", size: int = FAST_FRAME_LIMIT + 200_000) -> tuple[str, bytes]:
    """A step whose message makes the frame ``size`` bytes or so, as UTF-8 text (multi-byte
    characters cut across the server's reads); (message, frame)."""
    message = char * (size // len(char.encode()))
    return message, client_frame(
        json.dumps({"type": "step", "data": {"message": message}}, ensure_ascii=False).encode()
    )


def started(client: RawClient) -> RawClient:
    client.sock.sendall(RESET)
    assert client.answer()["type"] == "observation"
    return client


def test_a_large_frame_is_answered_whole_and_the_session_goes_on(serve) -> None:
    with serve(EchoText) as server:
        raw = started(RawClient(server.url))
        try:
            message, frame = large_step()
            raw.sock.sendall(frame + step_frame("small after"))
            assert raw.answer()["data"]["observation"]["echo"] == message
            assert raw.answer()["data"]["observation"]["echo"] == "small after"
            assert server.inflight_stats() == {"bytes": 0, "waiting": 0, "refused": 0}
        finally:
            raw.close()


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ('{"type": "step", "data": {"message": "' + "x" * (FAST_FRAME_LIMIT + 10) + '"', "INVALID_JSON"),
        (
            json.dumps({"type": "step", "data": {"message": "x" * (FAST_FRAME_LIMIT + 10)}, "extra": 1}),
            "VALIDATION_ERROR",
        ),
        (json.dumps({"type": "nope", "data": "x" * (FAST_FRAME_LIMIT + 10)}), "UNKNOWN_TYPE"),
    ],
    ids=["invalid-json", "invalid-frame", "unknown-type"],
)
def test_a_large_invalid_frame_is_answered_like_a_small_one(serve, payload: str, code: str) -> None:
    with serve(EchoText) as server, ws_connect(server) as ws:
        ask(ws, {"type": "reset"})
        answer = ask(ws, payload)
        assert answer["type"] == "error" and answer["data"]["code"] == code, answer["data"]
        assert (
            ask(ws, {"type": "step", "data": {"message": "still here"}})["data"]["observation"]["echo"] == "still here"
        )


def test_served_as_plain_asgi_a_large_frame_is_answered_too(serve) -> None:
    with serve(EchoText, hypercorn_patches=False) as server, ws_connect(server, max_size=None) as ws:
        ask(ws, {"type": "reset"})
        message = "é" * FAST_FRAME_LIMIT
        assert ask(ws, {"type": "step", "data": {"message": message}})["data"]["observation"]["echo"] == message


def _hold_room(server: Any) -> tuple[RawClient, bytes]:
    """A connection that has sent the start of a large frame (so it holds its room); the rest."""
    holder = started(RawClient(server.url))
    _, frame = large_step("x")
    holder.sock.sendall(frame[:100_000])
    wait_for(lambda: server.inflight_stats()["bytes"] > 0)
    return holder, frame[100_000:]


def test_no_room_within_the_wait_is_answered_server_busy_and_the_session_goes_on(serve) -> None:
    with serve(EchoText, **TIGHT, inflight_wait_s=0.0) as server:
        holder, rest = _hold_room(server)
        other = started(RawClient(server.url))
        try:
            message, frame = large_step()
            other.sock.sendall(frame + step_frame("small after"))
            busy = other.answer()
            assert busy["type"] == "error" and busy["data"]["code"] == "SERVER_BUSY", busy
            assert "SRV-MEM-1" in busy["data"]["message"]
            assert other.answer()["data"]["observation"]["echo"] == "small after"
            assert server.inflight_stats()["refused"] == 1

            holder.sock.sendall(rest)  # the holder's frame completes: answered, room given back
            assert holder.answer()["type"] == "observation"
            wait_for(lambda: server.inflight_stats()["bytes"] == 0)
            other.sock.sendall(frame)  # sent again, it is taken
            assert other.answer()["data"]["observation"]["echo"] == message
        finally:
            holder.close()
            other.close()


def test_a_frame_waits_for_room_and_is_then_taken(serve) -> None:
    with serve(EchoText, **TIGHT, inflight_wait_s=60.0) as server:
        holder, rest = _hold_room(server)
        other = started(RawClient(server.url))
        try:
            message, frame = large_step()
            other.sock.sendall(frame)
            wait_for(lambda: server.inflight_stats()["waiting"] == 1)
            holder.sock.sendall(rest)
            assert holder.answer()["type"] == "observation"
            assert other.answer()["data"]["observation"]["echo"] == message
            assert server.inflight_stats() == {"bytes": 0, "waiting": 0, "refused": 0}
        finally:
            holder.close()
            other.close()


def test_a_connection_gone_mid_frame_gives_its_room_back(serve) -> None:
    with serve(EchoText, **TIGHT, inflight_wait_s=60.0) as server:
        holder, _ = _hold_room(server)
        other = started(RawClient(server.url))
        try:
            message, frame = large_step()
            other.sock.sendall(frame)
            wait_for(lambda: server.inflight_stats()["waiting"] == 1)
            holder.close()  # its frame never ends
            assert other.answer()["data"]["observation"]["echo"] == message
            wait_for(lambda: server.inflight_stats()["bytes"] == 0)
        finally:
            other.close()


def test_the_budget_is_never_below_the_frame_limit() -> None:
    with pytest.raises(ValueError, match="max_inflight_bytes must be at least the frame limit"):
        ServerConfig(max_message_size_mb=2, max_inflight_bytes=MIB)
    assert ServerConfig(max_message_size_mb=2).inflight_limit_bytes == 4 * MIB
    assert ServerConfig(max_message_size_mb=2, max_inflight_bytes=3 * MIB).inflight_limit_bytes == 3 * MIB


def _large_step_body(message: str) -> bytes:
    return json.dumps({"action": {"message": message}}).encode()


def test_a_large_http_body_is_held_to_the_same_budget(serve) -> None:
    """``POST /step`` and ``POST /reset`` bodies over 1 MiB count against the budget of bytes
    in flight like ``/ws`` frames (``SRV-MEM-1``): no room within the wait is 503 ``SERVER_BUSY``."""
    with serve(EchoText, **TIGHT, inflight_wait_s=0.0) as server:
        holder, rest = _hold_room(server)
        try:
            message = "x" * (FAST_FRAME_LIMIT + 200_000)
            with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
                for path, body in (
                    ("/step", _large_step_body(message)),
                    ("/reset", json.dumps({"blob": message}).encode()),
                ):
                    busy = http.post(path, content=body, headers={"content-type": "application/json"})
                    assert busy.status_code == 503, (path, busy.status_code, busy.text[:200])
                    assert busy.json()["code"] == "SERVER_BUSY" and "SRV-MEM-1" in busy.json()["detail"]
                    assert busy.headers["retry-after"]
                assert server.inflight_stats()["refused"] == 2

                holder.sock.sendall(rest)  # the holder's frame completes: room given back
                assert holder.answer()["type"] == "observation"
                wait_for(lambda: server.inflight_stats()["bytes"] == 0)
                taken = http.post(
                    "/step", content=_large_step_body(message), headers={"content-type": "application/json"}
                )
                assert taken.status_code == 200 and taken.json()["observation"]["echo"] == message
                assert server.inflight_stats() == {"bytes": 0, "waiting": 0, "refused": 2}
        finally:
            holder.close()


def test_a_large_http_body_that_is_not_json_is_still_422(serve) -> None:
    with serve(EchoText) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        answer = http.post(
            "/step",
            content=b'{"action": {"message": "' + b"x" * (FAST_FRAME_LIMIT + 10),
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 422 and answer.json()["detail"][0]["type"] == "json_invalid"
        assert server.inflight_stats()["bytes"] == 0


def test_bytes_in_flight_are_a_metric(serve) -> None:
    """``openenv_inflight_bytes`` follows the budget: the room a frame being read holds, 0
    once it was parsed and answered."""
    with serve(EchoText, **TIGHT, inflight_wait_s=60.0) as server:
        assert scrape(server.url).value("openenv_inflight_bytes") == 0
        holder, rest = _hold_room(server)
        try:
            held = server.inflight_stats()["bytes"]
            assert held > FAST_FRAME_LIMIT
            assert scrape(server.url).value("openenv_inflight_bytes") == held
            holder.sock.sendall(rest)
            assert holder.answer()["type"] == "observation"
            wait_for(lambda: scrape(server.url).value("openenv_inflight_bytes") == 0)
        finally:
            holder.close()


def test_a_fragmented_large_message_is_held_to_the_budget_too(serve) -> None:
    """A large message that arrives in fragments counts against the budget too (``SRV-MEM-1``),
    from when it was collected whole until parsed: no room within the wait is ``SERVER_BUSY``,
    room is an answer."""
    with serve(EchoText, **TIGHT, inflight_wait_s=0.0) as server:
        holder, rest = _hold_room(server)
        try:
            with ws_connect(server, max_size=None) as ws:
                ask(ws, {"type": "reset"})
                message = "x" * (FAST_FRAME_LIMIT + 200_000)
                text = json.dumps({"type": "step", "data": {"message": message}})
                ws.send(iter([text[:500_000], text[500_000:]]))
                busy = json.loads(ws.recv(timeout=TIMEOUT))
                assert busy["type"] == "error" and busy["data"]["code"] == "SERVER_BUSY", busy
                assert server.inflight_stats()["refused"] == 1

                holder.sock.sendall(rest)
                assert holder.answer()["type"] == "observation"
                wait_for(lambda: server.inflight_stats()["bytes"] == 0)
                ws.send(iter([text[:500_000], text[500_000:]]))
                assert json.loads(ws.recv(timeout=TIMEOUT))["data"]["observation"]["echo"] == message
                assert server.inflight_stats() == {"bytes": 0, "waiting": 0, "refused": 1}
        finally:
            holder.close()


def test_a_large_binary_message_is_refused_without_room_or_parse(serve) -> None:
    """Binary frames are refused (``INVALID_JSON``) whatever their size: nothing to parse, so
    a full budget does not hold the refusal back."""
    with serve(EchoText, **TIGHT, inflight_wait_s=0.0) as server:
        holder, _ = _hold_room(server)
        try:
            with ws_connect(server, max_size=None) as ws:
                ask(ws, {"type": "reset"})
                answer = ask(
                    ws, json.dumps({"type": "step", "data": {"message": "x" * (FAST_FRAME_LIMIT + 10)}}).encode()
                )
                assert answer["data"]["code"] == "INVALID_JSON" and "Binary" in answer["data"]["message"]
                assert server.inflight_stats()["refused"] == 0
        finally:
            holder.close()


def test_large_mcp_bodies_are_held_to_the_same_budget(serve) -> None:
    """``POST /mcp`` bodies and ``WS /mcp`` frames over 1 MiB are parsed where ``/step``
    bodies are (``SRV-MEM-1``, ``SRV-MEM-2``): against the budget of bytes in flight, in the
    parse thread. No room within the wait: 503 ``SERVER_BUSY`` on HTTP, a JSON-RPC error
    naming it on the socket (which goes on); room: an answer."""
    from tests.mcp_surface.tool_envs import NotesEnv

    text = "x" * (FAST_FRAME_LIMIT + 200_000)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": text}}}
    body = json.dumps(call).encode()
    with serve(NotesEnv, **TIGHT, inflight_wait_s=0.0) as server:
        holder, rest = _hold_room(server)
        try:
            with (
                httpx.Client(base_url=server.url, timeout=TIMEOUT) as http,
                ws_connect(server, "/mcp", max_size=None) as mcp,
            ):
                busy = http.post("/mcp", content=body, headers={"content-type": "application/json"})
                assert busy.status_code == 503, (busy.status_code, busy.text[:200])
                assert busy.json()["code"] == "SERVER_BUSY" and "SRV-MEM-1" in busy.json()["detail"]
                mcp.send(body.decode())
                refused = json.loads(mcp.recv(timeout=TIMEOUT))
                assert refused["error"]["data"]["code"] == "SERVER_BUSY" and "SRV-MEM-1" in refused["error"]["message"]
                assert server.inflight_stats()["refused"] == 2

                holder.sock.sendall(rest)
                assert holder.answer()["type"] == "observation"
                wait_for(lambda: server.inflight_stats()["bytes"] == 0)
                taken = http.post("/mcp", content=body, headers={"content-type": "application/json"})
                assert taken.status_code == 200 and taken.json()["result"]["data"] == text.upper()
                mcp.send(body.decode())
                assert json.loads(mcp.recv(timeout=TIMEOUT))["result"]["data"] == text.upper()
                assert server.inflight_stats() == {"bytes": 0, "waiting": 0, "refused": 2}
        finally:
            holder.close()
