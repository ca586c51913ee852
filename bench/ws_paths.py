"""Round trips per second on three WebSocket paths of the same Hypercorn trio worker.

- ``raw``:   a raw ASGI echo handler (what ``/ws`` is routed to);
- ``quart``: the same echo through Quart-Trio's ``@app.websocket`` wrapper;
- ``env``:   the real ``/ws`` endpoint stepping ``EchoEnv`` (full protocol work).

The server runs in a child process, the clients (the ``websockets`` library on asyncio)
here, so the two do not share a GIL. Modes are measured in alternating rounds and the best
round is reported (the least disturbed by other load on the machine).
Usage: ``python bench/ws_paths.py [--seconds 2] [--rounds 3] [--connections 1 16]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

from websockets.asyncio.client import connect

SERVER = r"""
import sys, trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import websocket
from quart_trio import QuartTrio
mode = sys.argv[1]
if mode == "env":
    from openenv_anyio.envs.echo import EchoEnv
    from openenv_anyio.server import EnvServer, ServerConfig
    async def main():
        async with trio.open_nursery() as n:
            url = await n.start(EnvServer(EchoEnv, ServerConfig()).serve)
            print(url, flush=True)
    trio.run(main)
    raise SystemExit
quart = QuartTrio(__name__)
@quart.websocket("/ws")
async def echo():
    while True:
        await websocket.send(await websocket.receive())
async def raw(scope, receive, send):
    if scope["type"] != "websocket":
        return await quart(scope, receive, send)
    await receive(); await send({"type": "websocket.accept"})
    while True:
        m = await receive()
        if m["type"] != "websocket.receive":
            return
        await send({"type": "websocket.send", "text": m.get("text")})
config = Config(); config.bind = ["127.0.0.1:0"]; config.accesslog = None; config.errorlog = None
async def main():
    async with trio.open_nursery() as n:
        app = raw if mode == "raw" else quart
        binds = await n.start(lambda task_status: serve(app, config, task_status=task_status))
        print(binds[0], flush=True)
trio.run(main)
"""

STEP = json.dumps({"type": "step", "data": {"message": "hi"}})


async def clients(url: str, connections: int, seconds: float) -> float:
    counts = [0] * connections
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds

    async def one(index: int) -> None:
        async with connect(url, compression=None) as ws:
            await ws.send(json.dumps({"type": "reset"}))
            await ws.recv()
            while loop.time() < deadline:
                await ws.send(STEP)
                await ws.recv()
                counts[index] += 1

    await asyncio.gather(*(one(index) for index in range(connections)))
    return sum(counts) / seconds


MODES = ("raw", "quart", "env")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    servers = {
        mode: subprocess.Popen([sys.executable, "-c", SERVER, mode], stdout=subprocess.PIPE, text=True)
        for mode in MODES
    }
    try:
        urls = {mode: "ws" + p.stdout.readline().strip().removeprefix("http") + "/ws" for mode, p in servers.items()}  # type: ignore[union-attr]
        time.sleep(0.3)
        best: dict[tuple[str, int], float] = {}
        for _ in range(args.rounds):
            for n in args.connections:
                for mode in MODES:
                    rate = asyncio.run(clients(urls[mode], n, args.seconds))
                    best[mode, n] = max(best.get((mode, n), 0.0), rate)
        for mode in MODES:
            print(f"{mode:6}", "  ".join(f"{n:3} conn: {best[mode, n]:8.0f} rt/s" for n in args.connections))
    finally:
        for process in servers.values():
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
