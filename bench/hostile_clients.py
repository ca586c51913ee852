"""Bad clients under load (``python -m bench.scale hostile``): what they cost everyone else.

A fresh server (``ours``, the inline echo) serves ``--probes`` well-behaved sessions that step
as fast as they are answered; their step latency is taken quiet, then while one kind of bad
client runs beside them, in a process of its own:

- ``silent``: ``--silent`` TCP connections that never send a byte;
- ``nonreader``: ``--nonreaders`` WebSocket sessions that send steps and never read, so the
  server's writes to them fill the TCP window and stall;
- ``flood``: ``--flood`` connections opened at once, each sending a WebSocket upgrade request
  and reading nothing after it.

Reported per kind: the probes' step p50/p99 and their ratio to the quiet figures (the bound
in the issue: within 2x).
"""

from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any

import anyio

from bench.procs import kill_group, raise_fd_limit, spawn, start_server
from bench.sessions import percentile

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


def attack(kind: str, url: str, count: int) -> None:
    """Run one bad client against ``url`` until killed (the child process of a run)."""
    raise_fd_limit()
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


async def _probe(url: str, sessions: int, steps: int) -> list[float]:
    from bench.stacks import ours

    latencies: list[float] = []

    async def one() -> None:
        async with ours.open_session(url) as env:
            await env.reset()
            for _ in range(steps):
                started = time.perf_counter()
                await env.step({"message": "x"})
                latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(one)
    return latencies


def _figures(latencies: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(latencies, 50) * 1000, 2), "p99_ms": round(percentile(latencies, 99) * 1000, 2)}


def run(*, probes: int = 16, steps: int = 200, counts: dict[str, int]) -> dict[str, Any]:
    """The quiet figures, then each kind's (see the module doc)."""
    server = start_server("ours[echo_inline]", ["ours", "echo_inline", "--max-concurrent-envs", "20000"])
    figures: dict[str, Any] = {"probes": probes, "steps": steps}
    try:
        quiet = _figures(anyio.run(_probe, server.url, probes, steps, backend="trio"))
        figures["quiet"] = quiet
        for kind, count in counts.items():
            proc, _ = spawn(["-m", "bench.hostile_clients", kind, server.url, str(count)], stdout=-1)
            try:
                assert proc.stdout is not None
                proc.stdout.readline()  # ready: every connection opened (and written to)
                found = _figures(anyio.run(_probe, server.url, probes, steps, backend="trio"))
                found["p99_vs_quiet"] = round(found["p99_ms"] / quiet["p99_ms"], 2)
                found["count"] = count
                figures[kind] = found
            finally:
                kill_group(proc, grace_s=1.0)
            time.sleep(1.0)  # the server lets the bad connections go
    finally:
        server.stop()
    return figures


if __name__ == "__main__":
    attack(sys.argv[1], sys.argv[2], int(sys.argv[3]))
