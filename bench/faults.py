"""Fault isolation, measured: what one misbehaving client or environment costs the others.

Three worst cases, each run side by side in one process against our server on loopback:

- ``ui``: steps/s of one agent with no ``/ws/ui`` subscriber, with ``--stalled`` subscribers
  that never read under the default ``max_ui_subscribers`` cap (the ones beyond it are
  refused at once), and with the cap lifted. Reported as ratios to the first.
- ``abandon``: ``--slots`` clients of the resume extension time out mid-step on a server
  with as many slots; seconds until a new session gets one (the resume grace is 60 s; a
  client that gives its session up closes with 1001, so the slot comes free as soon as the
  abandoned step ends).
- ``http``: ``--requests`` concurrent ``POST /step`` against ``--max-concurrent-envs 2``:
  the most threads the server process ran at once, and how many requests were refused (503).
- ``crash``: ``openenv-anyio serve`` as a process, ``--sessions`` sessions; one step
  segfaults (then, on a fresh server, one calls ``os._exit``) under ``--isolate thread`` and
  ``--isolate process``: how many of the other sessions still step, and whether the server
  process survived.

Usage: ``python -m bench.faults [--only ui abandon http crash] [--stalled 1000]``. Nothing here
asserts: the tests check the behaviour, this reports what it costs.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import trio

from openenv_anyio.client import CapacityReached, EnvClient, EnvClientError, MessageTimeout
from openenv_anyio.server import EnvServer, ServerConfig

from .envs import EchoEnv


class SlowEchoEnv(EchoEnv):
    """``{"message": ..., "sleep": S}`` blocks the session's thread S seconds."""

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(float(action.get("sleep", 0)))
        return super().step({"message": action["message"]})


class CrashingEchoEnv(EchoEnv):
    """``{"message": ..., "crash": "segfault" | "exit"}`` ends the process the step runs in."""

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        crash = action.get("crash")
        if crash == "segfault":
            ctypes.string_at(0)
        elif crash == "exit":
            os._exit(3)
        return super().step({"message": action["message"]})


class ThreadPeak:
    """Samples ``threading.active_count()`` of this process until stopped."""

    def __init__(self) -> None:
        self.peak = threading.active_count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, threading.active_count())

    def __enter__(self) -> ThreadPeak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _stalled_subscriber(host: str, port: int) -> socket.socket:
    """A /ws/ui subscriber that completes the handshake and never reads again."""
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws/ui HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    return sock


async def _steps_per_s(url: str, seconds: float) -> float:
    async with EnvClient(url, reconnect=False) as env:
        await env.reset()
        steps, start = 0, trio.current_time()
        while trio.current_time() - start < seconds:
            await env.step({"message": "x" * 200})
            steps += 1
        return steps / (trio.current_time() - start)


def ui(stalled: int, seconds: float) -> None:
    rows = []
    for label, subscribers, cap in (
        ("no subscriber", 0, 100),
        (f"{stalled} stalled, default cap (100)", stalled, 100),
        (f"{stalled} stalled, no cap", stalled, None),
    ):
        config = ServerConfig(max_ui_subscribers=cap, ping_interval_s=None, ping_timeout_s=None)
        with EnvServer(EchoEnv, config).run_in_thread() as server:
            host, port = server.url.removeprefix("http://").rsplit(":", 1)
            sockets = [_stalled_subscriber(host, int(port)) for _ in range(subscribers)]
            try:
                time.sleep(3.0)  # handshakes done, refusals sent, first updates queued
                rows.append((label, trio.run(_steps_per_s, server.url, seconds), server.ui_stats()["subscribers"]))
            finally:
                for sock in sockets:
                    sock.close()
    base = rows[0][1]
    for label, rate, connected in rows:
        print(f"ui      {label:36} {rate:8.0f} steps/s  ratio {rate / base:5.2f}  subscribers kept {connected}")


async def _abandon(url: str, slots: int) -> float:
    async def give_up() -> None:
        async with EnvClient(url, message_timeout_s=0.1) as env:
            await env.reset()
            try:
                await env.step({"message": "x", "sleep": 1.0})
            except MessageTimeout:
                pass

    async with trio.open_nursery() as nursery:
        for _ in range(slots):
            nursery.start_soon(give_up)
    start = trio.current_time()
    while True:
        try:
            async with EnvClient(url) as env:
                await env.reset()
                return trio.current_time() - start
        except CapacityReached:
            await trio.sleep(0.05)


def abandon(slots: int) -> None:
    config = ServerConfig(max_concurrent_envs=slots, resume_grace_s=60.0)
    with EnvServer(SlowEchoEnv, config).run_in_thread() as server:
        waited = trio.run(_abandon, server.url, slots)
    print(
        f"abandon {slots} clients timed out mid-step on {slots} slots: "
        f"a new session got in after {waited:.2f} s (resume grace 60 s)"
    )


async def _burst(url: str, requests: int) -> list[int]:
    statuses: list[int] = []
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=requests)) as client:

        async def one() -> None:
            statuses.append((await client.post("/step", json={"action": {"message": "x", "sleep": 0.2}})).status_code)

        async with trio.open_nursery() as nursery:
            for _ in range(requests):
                nursery.start_soon(one)
    return statuses


def http(requests: int) -> None:
    config = ServerConfig(max_concurrent_envs=2)
    with EnvServer(SlowEchoEnv, config).run_in_thread() as server:
        before = threading.active_count()
        with ThreadPeak() as peak:
            statuses = trio.run(_burst, server.url, requests)
    ok, refused = statuses.count(200), statuses.count(503)
    print(
        f"http    {requests} concurrent POST /step, limit 2: peak threads {peak.peak} (idle {before}), "
        f"{ok} answered, {refused} refused with 503"
    )


async def _crash_round(url: str, sessions: int, fault: str) -> int:
    """Open ``sessions`` sessions, crash one, return how many of the others still step."""
    alive = 0
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_exit(_ignore_client_errors)  # called last: sees what closing the clients raised
        victim = await stack.enter_async_context(EnvClient(url, reconnect=False))
        others = [await stack.enter_async_context(EnvClient(url, reconnect=False)) for _ in range(sessions - 1)]
        for client in (victim, *others):
            await client.reset()
        try:
            await victim.step({"message": "x", "crash": fault})
        except EnvClientError:
            pass
        for client in others:
            try:
                with trio.fail_after(10):
                    for _ in range(3):
                        await client.step({"message": "x"})
                alive += 1
            except (EnvClientError, trio.TooSlowError):
                pass
    return alive


async def _ignore_client_errors(kind: Any, error: Any, traceback: Any) -> bool:
    """Closing the sessions of a server that died fails: that is the case being measured."""
    return isinstance(error, EnvClientError)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def crash(sessions: int) -> None:
    for fault in ("segfault", "exit"):
        for isolate in ("thread", "process"):
            port = _free_port()
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "openenv_anyio",
                    "serve",
                    "bench.faults:CrashingEchoEnv",
                    "--port",
                    str(port),
                    "--isolate",
                    isolate,
                    "--log-level",
                    "error",
                ],
                stderr=subprocess.DEVNULL,
            )
            try:
                url = f"http://127.0.0.1:{port}"
                deadline = time.monotonic() + 120
                while True:
                    try:
                        if httpx.get(url + "/health", timeout=1).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit(f"the {isolate} server did not start")
                    time.sleep(0.2)
                try:
                    kept = trio.run(_crash_round, url, sessions, fault)
                except EnvClientError:
                    kept = 0
                status = server.poll()
                fate = "server alive" if status is None else f"server exited ({status})"
                print(
                    f"crash   {fault:8} --isolate {isolate:7}: "
                    f"{kept}/{sessions - 1} other sessions still stepping, {fate}"
                )
            finally:
                if server.poll() is None:
                    server.terminate()
                server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="+", choices=("ui", "abandon", "http", "crash"), default=("ui", "abandon", "http", "crash")
    )
    parser.add_argument("--stalled", type=int, default=1000, help="stalled /ws/ui subscribers (default 1000)")
    parser.add_argument("--seconds", type=float, default=2.0, help="stepping time per ui row (default 2)")
    parser.add_argument("--slots", type=int, default=8, help="slots and abandoning clients (default 8)")
    parser.add_argument("--requests", type=int, default=300, help="concurrent HTTP requests (default 300)")
    parser.add_argument(
        "--sessions", type=int, default=8, help="sessions of the crash case, the crashing one included (default 8)"
    )
    args = parser.parse_args()
    if "ui" in args.only:
        ui(args.stalled, args.seconds)
    if "abandon" in args.only:
        abandon(args.slots)
    if "http" in args.only:
        http(args.requests)
    if "crash" in args.only:
        crash(args.sessions)


if __name__ == "__main__":
    main()
