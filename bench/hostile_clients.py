"""Bad clients under load (``python -m bench.scale hostile``): what they cost everyone else.

A fresh server (``ours``, the inline echo) serves ``--probes`` well-behaved sessions that step
as fast as they are answered; their step latency is taken quiet, then while one kind of bad
client runs beside them, in a process of its own:

- ``silent``: ``--silent`` TCP connections that never send a byte;
- ``nonreader``: ``--nonreaders`` WebSocket sessions that send steps and never read, so the
  server's writes to them fill the TCP window and stall;
- ``flood``: ``--flood`` connections opened at once, each sending a WebSocket upgrade request
  and reading nothing after it.

The probes connect and reset first; each kind's figures are their steps from the moment the
bad client starts until ``--steps`` more after it holds all its connections: step p50/p99 and
the p99's ratio to the quiet one (the issue's bound: within 2x), and the connect time of one
new session once the bad client holds them all.

Each kind runs twice, alternating: against our server, and as a control against a bare
socket sink in a process of its own (:func:`sink`: accepts, answers an upgrade request with
a canned 101 and reads nothing more), while the probes step on our server as before. The
control's ratio is what the bad client's own work and the kernel's cost the probes on these
shared cores with no server handling the bad connections at all; the difference between the
two ratios is our server's share.
"""

from __future__ import annotations

import json
import selectors
import signal
import socket
import sys
import time
from typing import Any

import anyio

from bench.procs import kill_group, raise_fd_limit, server_metric, spawn, start_server
from bench.sessions import percentile
from openenv_anyio.ws import generate_accept_token

#: each kind of bad client and how many connections it opens by default
COUNTS = {"silent": 1000, "nonreader": 16, "flood": 10_000}
UPGRADE = (
    "GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def _masked_text(payload: bytes) -> bytes:
    """One client text frame (masked with a zero key, which RFC 6455 allows)."""
    length = len(payload)
    if length < 126:
        head = bytes([0x81, 0x80 | length])
    else:
        head = bytes([0x81, 0x80 | 126]) + length.to_bytes(2, "big")
    return head + b"\0\0\0\0" + payload


SINK_ANSWER = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: " + generate_accept_token(b"dGhlIHNhbXBsZSBub25jZQ==") + b"\r\n\r\n"
)


def sink() -> None:
    """The control's target (a child process, until killed): the cheapest server there is.

    It prints its port, accepts every connection and holds it; the first bytes a connection
    sends are answered with :data:`SINK_ANSWER` (the 101 the bad clients wait for, its key
    theirs) and nothing more is read from it.
    """
    raise_fd_limit()
    listener = socket.create_server(("127.0.0.1", 0), backlog=socket.SOMAXCONN)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    held: set[socket.socket] = set()
    print(listener.getsockname()[1], flush=True)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                try:
                    while True:
                        conn, _ = listener.accept()
                        conn.setblocking(False)
                        held.add(conn)
                        selector.register(conn, selectors.EVENT_READ)
                except BlockingIOError:
                    continue
            conn = key.fileobj
            assert isinstance(conn, socket.socket)
            selector.unregister(conn)
            try:
                if conn.recv(65536):
                    conn.send(SINK_ANSWER)
                    continue
            except OSError:
                pass
            held.discard(conn)  # its client has gone
            conn.close()


def attack(kind: str, url: str, count: int) -> None:
    """Run one bad client against ``url`` until killed (the child process of a run).

    It says ``armed`` once started and waits for SIGUSR1 before its first connection, so that
    the interpreter's own start is not counted against the server; ``ready`` once it holds
    all its connections.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    raise_fd_limit()
    print("armed", flush=True)
    signal.sigwait({signal.SIGUSR1})
    host, port = url.removeprefix("http://").rsplit(":", 1)
    address = (host, int(port))
    held: list[socket.socket] = []
    request = UPGRADE.format(host=host).encode()
    for _ in range(count):
        try:
            sock = socket.create_connection(address, timeout=30)
        except OSError:
            continue
        held.append(sock)
        if kind == "silent":
            continue
        sock.sendall(request)
        if kind == "nonreader":
            sock.recv(4096)  # the 101
            sock.setblocking(False)
            step = _masked_text(json.dumps({"type": "step", "data": {"message": "x" * 1000}}).encode())
            reset = _masked_text(b'{"type": "reset", "data": {}}')
            try:
                sock.send(reset)
                while True:  # until the window is shut both ways
                    sock.send(step)
            except BlockingIOError:
                pass
    print("ready", flush=True)
    while True:
        time.sleep(60)


class _Probes:
    """Well-behaved sessions, connected and reset before any bad client comes."""

    def __init__(self, envs: list[Any]) -> None:
        self.envs = envs

    async def step(self, rounds: int) -> list[float]:
        latencies: list[float] = []

        async def one(env: Any) -> None:
            for _ in range(rounds):
                started = time.perf_counter()
                await env.step({"message": "x"})
                latencies.append(time.perf_counter() - started)

        async with anyio.create_task_group() as tg:
            for env in self.envs:
                tg.start_soon(one, env)
        return latencies


def _figures(latencies: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(latencies, 50) * 1000, 2), "p99_ms": round(percentile(latencies, 99) * 1000, 2)}


async def _beside(sessions: _Probes, url: str, target: str, kind: str, count: int, steps: int) -> dict[str, Any]:
    """The probes' figures while one bad client of ``kind`` connects to ``target`` and holds
    ``count`` connections there, and one new session's connect time to our server (``url``)."""
    from bench.stacks import ours

    proc, _ = spawn(["-m", "bench.hostile_clients", kind, target, str(count)], stdout=-1)
    try:
        assert proc.stdout is not None
        ready = anyio.Event()

        def wait_ready(out: Any = proc.stdout) -> None:
            out.readline()

        await anyio.to_thread.run_sync(wait_ready)  # armed
        proc.send_signal(signal.SIGUSR1)

        async def watch() -> None:
            await anyio.to_thread.run_sync(wait_ready)
            ready.set()

        latencies: list[float] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            while not ready.is_set():  # while the bad client connects
                latencies += await sessions.step(1)
            latencies += await sessions.step(steps)  # and once it holds them all
            started = time.perf_counter()
            async with ours.open_session(url, connect_timeout_s=120.0) as fresh:
                connected = time.perf_counter() - started
                await fresh.reset()
        found = _figures(latencies)
        found["new_session_connect_ms"] = round(connected * 1000, 1)
        return found
    finally:
        kill_group(proc, grace_s=1.0)
        if target == url:
            await _let_go(url, len(sessions.envs))
        await anyio.sleep(1.0)  # the kernel lets the bad connections go


async def _let_go(url: str, probes: int, bound_s: float = 120.0) -> None:
    """Wait until our server holds only the probes' sessions again: the next measurement
    (the control above all) must not run beside the teardown of the bad client's sessions,
    which for a flood of 10,000 takes the server seconds."""
    with anyio.fail_after(bound_s):
        while await anyio.to_thread.run_sync(server_metric, url, "openenv_sessions_active") > probes:
            await anyio.sleep(0.2)


async def _measure(url: str, sink_url: str, probes: int, steps: int, counts: dict[str, int]) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    from bench.stacks import ours

    figures: dict[str, Any] = {"probes": probes, "steps": steps}
    async with AsyncExitStack() as stack:
        envs = [await stack.enter_async_context(ours.open_session(url)) for _ in range(probes)]
        for env in envs:
            await env.reset()
        sessions = _Probes(envs)
        quiet = _figures(await sessions.step(steps))
        figures["quiet"] = quiet
        for kind, count in counts.items():
            found = await _beside(sessions, url, url, kind, count, steps)
            control = await _beside(sessions, url, sink_url, kind, count, steps)
            found["p99_vs_quiet"] = round(found["p99_ms"] / quiet["p99_ms"], 2)
            found["count"] = count
            found["control"] = control | {"p99_vs_quiet": round(control["p99_ms"] / quiet["p99_ms"], 2)}
            figures[kind] = found
    return figures


def run(*, probes: int = 16, steps: int = 200, counts: dict[str, int]) -> dict[str, Any]:
    """The quiet figures, then each kind's against our server and against the sink (see the
    module doc)."""
    server = start_server("ours[echo_inline]", ["ours", "echo_inline", "--max-concurrent-envs", "20000"])
    target, _ = spawn(["-m", "bench.hostile_clients", "sink"], stdout=-1)
    try:
        assert target.stdout is not None
        sink_url = f"http://127.0.0.1:{int(target.stdout.readline())}"
        return anyio.run(_measure, server.url, sink_url, probes, steps, counts, backend="trio")
    finally:
        kill_group(target, grace_s=1.0)
        server.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["sink"]:
        sink()
    else:
        attack(sys.argv[1], sys.argv[2], int(sys.argv[3]))
