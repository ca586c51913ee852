"""The Hypercorn adapter: its inventory matches the installed Hypercorn, every patch is
engaged while one of our servers runs and undone after the last one stops, and the
plain-ASGI path (no patches) serves sessions correctly."""

from __future__ import annotations

from typing import Any

import pytest
from wsproto.events import CloseConnection

from openenv_anyio.server import EnvServer, ServerConfig, hypercorn_adapter
from openenv_anyio.server.hypercorn_adapter.inventory import Patch, missing, resolve

from .conftest import ask, ws_connect
from .test_direct_ws import RESET, EchoText, RawClient, client_frame, step_frame


def _current() -> list[Any]:
    values = []
    for patch in hypercorn_adapter.PATCHES:
        owner, name = resolve(patch.target)
        values.append(getattr(owner, name))
    return values


def test_the_inventory_matches_the_installed_hypercorn() -> None:
    assert hypercorn_adapter.problems() == []
    assert len(hypercorn_adapter.PATCHES) == len({patch.target for patch in hypercorn_adapter.PATCHES})


def test_a_name_hypercorn_lacks_is_reported() -> None:
    absent = Patch("hypercorn.trio.tcp_server:TCPServer.no_such_method", lambda original: original, "test")
    assert missing((absent,)) == ["hypercorn.trio.tcp_server:TCPServer.no_such_method"]
    assert missing((Patch("hypercorn.no_such_module:X", lambda original: original, "test"),)) == [
        "hypercorn.no_such_module:X"
    ]


def test_every_patch_is_engaged_while_a_server_runs_and_undone_after_the_last(serve) -> None:
    originals = _current()
    with serve(EchoText) as first:
        engaged = _current()
        for patch, before, now in zip(hypercorn_adapter.PATCHES, originals, engaged, strict=True):
            assert now is not before, f"{patch.target} is not patched while a server runs"
        with serve(EchoText) as second:
            assert _current() == engaged
            with ws_connect(second) as ws:
                assert ask(ws, {"type": "reset"})["type"] == "observation"
        assert _current() == engaged, "the first server still runs: the patches stay"
        with ws_connect(first) as ws:
            assert ask(ws, {"type": "reset"})["type"] == "observation"
    assert _current() == originals


def test_the_fast_path_is_engaged(serve) -> None:
    """direct_ws: a frame sent with the handshake is answered, compression is declined, and
    after the handshake the connection is the server-role ``WebSocketConnection``: its close
    for a broken frame names why (wsproto inside Hypercorn sends the code alone)."""
    with serve(EchoText) as server:
        raw = RawClient(server.url, first_frames=RESET)
        assert raw.answer()["type"] == "observation"
        raw.sock.sendall(client_frame(b"{}", mask=False))
        close = raw.next_event()
        assert isinstance(close, CloseConnection) and (close.code, close.reason) == (1002, "invalid frame")
        raw.close()
        with ws_connect(server, compression="deflate") as ws:
            assert ws.response.headers.get("Sec-WebSocket-Extensions") is None


def test_plain_asgi_serves_sessions_without_any_patch() -> None:
    originals = _current()
    config = ServerConfig(hypercorn_patches=False, validate_outbound=True, shutdown_grace_s=2.0, ping_interval_s=0.2)
    with EnvServer(EchoText, config).run_in_thread() as server:
        assert _current() == originals
        with ws_connect(server, compression="deflate") as ws:  # Hypercorn's own stream: it negotiates
            assert "permessage-deflate" in (ws.response.headers.get("Sec-WebSocket-Extensions") or "")
            assert ask(ws, {"type": "reset"})["type"] == "observation"
            answer = ask(ws, {"type": "step", "data": {"message": "plain"}})
            assert answer["data"]["observation"]["echo"] == "plain"
            assert ask(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        raw = RawClient(server.url)
        raw.sock.sendall(RESET + step_frame("after a reset"))
        assert raw.answer()["type"] == "observation"
        assert raw.answer()["data"]["observation"]["echo"] == "after a reset"
        raw.close()
    assert _current() == originals


def test_a_failed_check_serves_plain_asgi_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hypercorn_adapter, "HYPERCORN_SERIES", "9.9.")
    originals = _current()
    with pytest.warns(RuntimeWarning, match="plain ASGI.*9.9.x"):
        with hypercorn_adapter.install() as engaged:
            assert engaged is False
            assert _current() == originals
