"""``EnvServer.serve`` used from trio directly, driven by trio-websocket (a second, independent
client implementation)."""

from __future__ import annotations

import json

import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

from openenv_anyio.core import decode_server_frame
from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server import EnvServer, ServerConfig

pytestmark = pytest.mark.trio


async def test_serve_reports_url_and_shuts_down_cleanly() -> None:
    """WS-SHUT-1 under trio: ``task_status.started(url)``; ``shutdown()`` closes with 1001."""
    server = EnvServer(GuessNumberEnv, ServerConfig(validate_outbound=True, shutdown_grace_s=2.0))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
            async with open_websocket_url("ws" + url.removeprefix("http") + "/ws") as ws:
                await ws.send_message(json.dumps({"type": "reset", "data": {"seed": 4, "low": 1, "high": 3}}))
                first = decode_server_frame(await ws.get_message())
                assert first.observation["hint"] == "start"
                await ws.send_message(json.dumps({"type": "step", "data": {"guess": "two"}}))
                error = json.loads(await ws.get_message())
                assert error["data"]["code"] == "VALIDATION_ERROR"
                assert error["data"]["errors"][0]["pointer"] == "/data/guess"
                assert server.stats()["active_sessions"] == 1
                server.shutdown()
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.get_message()
                assert closed.value.reason.code == 1001
        assert server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0}
