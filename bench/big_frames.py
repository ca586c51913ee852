"""Big inbound frames, measured: what valid frames of tens of MiB cost the other sessions.

A server process (``python -m bench.serve ours echo``, a fresh one per run, so its peak RSS
is this run's) serves ``--sessions`` small-stepping sessions of this process's client; once
they step, ``--frames`` raw connections send one valid ``reset`` frame of ``--frame-mib``
MiB each, all at once (``--via http``: ``POST /reset`` bodies of that size, each on a
connection of its own; the frame's bulk is one string among the reset's keyword arguments:
the environment ignores it and answers a small observation, so the figures are those of the
inbound path). Reported per variant, medians of ``--repeats`` interleaved runs:

- ``stall``: the longest step any small session waited for while the big frames were
  sent, parsed and answered (``quiet``: the longest step in as long a window before them);
- ``rss x``: the server's peak RSS (``VmHWM``) above its RSS just before the big frames, as a
  multiple of one frame's size;
- ``answered``: seconds from the first big byte sent to the last big frame's answer.

A variant ``NAME=PATH`` runs the server from another checkout of ``openenv_anyio`` (``PATH``
first on its ``PYTHONPATH``), e.g. a snapshot of the code before a change::

    git archive main | tar -x -C /tmp/before
    python -m bench.big_frames --variant before=/tmp/before --variant after --frames 1 4

Nothing here asserts: the tests check the behaviour, this reports what it costs.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import os
import socket
import statistics
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson
import trio

from openenv_anyio.client import EnvClient

from .procs import HOST, ServerProcess, proc_status, start_server

MIB = 1024 * 1024
#: what fills the big string: ASCII (one byte a character) or a 3-byte UTF-8 character
TEXTS = {"ascii": "x", "unicode": "\u20ac"}


@dataclass(frozen=True)
class Variant:
    name: str
    pythonpath: str | None  # None: this checkout


@dataclass
class RunFigures:
    stall_s: float
    quiet_s: float
    rss_multiple: float
    answered_s: float
    refused: int


@dataclass
class Results:
    runs: dict[tuple[str, int], list[RunFigures]] = field(default_factory=dict)


def big_frame(size: int, text: str) -> bytes:
    """One masked text frame (masking key 0: the payload reads as sent) of exactly ``size``
    payload bytes: a valid ``reset`` whose keyword argument ``blob`` is the bulk."""
    head, tail = b'{"type":"reset","data":{"blob":"', b'"}}'
    unit = text.encode()
    count, rest = divmod(size - len(head) - len(tail), len(unit))
    payload = head + unit * count + b" " * rest + tail
    assert len(payload) == size
    return bytes((0x81, 0x80 | 127)) + struct.pack("!Q", size) + b"\0\0\0\0" + payload


def big_body(size: int, text: str) -> bytes:
    """A ``POST /reset`` body of exactly ``size`` bytes: the reset's keyword argument ``blob``
    is the bulk (the same request as :func:`big_frame`'s, over HTTP)."""
    head, tail = b'{"blob":"', b'"}'
    unit = text.encode()
    count, rest = divmod(size - len(head) - len(tail), len(unit))
    body = head + unit * count + b" " * rest + tail
    assert len(body) == size
    return body


def _post_big(port: int, body: bytes) -> str:
    """``POST /reset`` with ``body`` on a connection of its own; ``observation`` for a 200, the
    error code of a 503 (``SERVER_BUSY``), else the HTTP status."""
    with socket.create_connection((HOST, port)) as sock:
        sock.sendall(
            (
                f"POST /reset HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            + body
        )
        response = bytearray()
        while b"\r\n\r\n" not in response:
            chunk = sock.recv(65536)
            if not chunk:
                return "closed"
            response += chunk
        head, _, rest = bytes(response).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0)
        payload = _read_exact(sock, length, bytearray(rest))
    status = lines[0].split(" ", 2)[1]
    if status == "200":
        return "observation"
    if status == "503":
        return str(orjson.loads(payload).get("code") or status)
    return status


def _open_raw(port: int) -> socket.socket:
    """A ``/ws`` connection after its opening handshake, on a blocking socket."""
    sock = socket.create_connection((HOST, port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the server closed during the handshake")
        response += chunk
    if not response.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(response.split(b"\r\n", 1)[0].decode(errors="replace"))
    return sock


def _read_exact(sock: socket.socket, n: int, buffered: bytearray) -> bytes:
    while len(buffered) < n:
        chunk = sock.recv(max(65536, n - len(buffered)))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buffered += chunk
    data = bytes(buffered[:n])
    del buffered[:n]
    return data


def _read_text(sock: socket.socket, buffered: bytearray) -> str:
    """The next unmasked text frame the server sends (small: no fragments expected)."""
    while True:
        first, second = _read_exact(sock, 2, buffered)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", _read_exact(sock, 2, buffered))[0]
        elif length == 127:
            length = struct.unpack("!Q", _read_exact(sock, 8, buffered))[0]
        payload = _read_exact(sock, length, buffered)
        if first & 0x0F == 0x1:
            return payload.decode()
        if first & 0x0F == 0x8:
            raise ConnectionError(f"closed by the server: {payload[:2].hex()} {payload[2:].decode(errors='replace')}")


def _send_big(sock: socket.socket, frame: bytes) -> str:
    """Send ``frame``; the type (or error code) of the answer."""
    sock.sendall(frame)
    answer = orjson.loads(_read_text(sock, bytearray()))
    return str(answer["data"]["code"]) if answer["type"] == "error" else str(answer["type"])


class _Stepper:
    """Steps one small session until stopped; keeps (start, latency) of every step."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, float]] = []

    async def run(
        self, url: str, stop: trio.Event, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with EnvClient(url, reconnect=False) as env:
            await env.reset()
            task_status.started()
            while not stop.is_set():
                start = trio.current_time()
                await env.step({"message": "x" * 64})
                self.steps.append((start, trio.current_time() - start))

    def longest(self, since: float, until: float) -> float:
        return max(
            (latency for start, latency in self.steps if since <= start + latency and start <= until), default=0.0
        )


async def _run(server: ServerProcess, frame: bytes, frames: int, sessions: int, via: str) -> tuple[RunFigures, int]:
    steppers = [_Stepper() for _ in range(sessions)]
    stop = trio.Event()
    sockets = [_open_raw(server.port) for _ in range(frames)] if via == "ws" else []
    answers: list[str] = []
    try:
        async with trio.open_nursery() as nursery:
            for stepper in steppers:
                await nursery.start(stepper.run, server.url, stop)
            await trio.sleep(1.0)  # warm
            quiet_from = trio.current_time()
            await trio.sleep(1.0)
            rss_before = proc_status(server.pid).get("VmRSS", 0)
            sent_at = trio.current_time()

            async def send(sock: socket.socket | None) -> None:
                if sock is None:
                    answers.append(await trio.to_thread.run_sync(_post_big, server.port, frame))
                else:
                    answers.append(await trio.to_thread.run_sync(_send_big, sock, frame))

            async with trio.open_nursery() as senders:
                for sock in sockets or [None] * frames:
                    senders.start_soon(send, sock)
            answered_at = trio.current_time()
            await trio.sleep(0.5)
            peak = proc_status(server.pid).get("VmHWM", 0)
            stop.set()
    finally:
        for sock in sockets:
            sock.close()
    stall = max(stepper.longest(sent_at, answered_at + 0.5) for stepper in steppers)
    quiet = max(stepper.longest(quiet_from, sent_at) for stepper in steppers)
    refused = sum(answer != "observation" for answer in answers)
    payload = len(frame) - 14 if via == "ws" else len(frame)
    figures = RunFigures(stall, quiet, (peak - rss_before) * 1024 / payload, answered_at - sent_at, refused)
    return figures, rss_before


@contextlib.contextmanager
def _server(variant: Variant) -> Iterator[ServerProcess]:
    server = start_server(variant.name, ["ours", "echo"], pythonpath=variant.pythonpath)
    try:
        yield server
    finally:
        server.stop()


def measure(
    variants: list[Variant],
    frame_counts: list[int],
    frame_mib: float,
    text: str,
    sessions: int,
    repeats: int,
    log: Callable[[str], None] = functools.partial(print, flush=True),
    via: str = "ws",
) -> Results:
    frame = (big_frame if via == "ws" else big_body)(int(frame_mib * MIB), TEXTS[text])
    results = Results()
    for repeat in range(repeats):
        for frames in frame_counts:
            for variant in variants:
                with _server(variant) as server:
                    figures, rss_before = trio.run(_run, server, frame, frames, sessions, via)
                    if not server.alive():
                        log(f"  {variant.name}: the server died: {server.last_error_line()}")
                results.runs.setdefault((variant.name, frames), []).append(figures)
                log(
                    f"  run {repeat + 1}/{repeats} {variant.name:>8} {frames} x {frame_mib:g} MiB: "
                    f"stall {figures.stall_s:.3f} s (quiet {figures.quiet_s:.3f}), rss +{figures.rss_multiple:.2f} x "
                    f"(from {rss_before / 1024:.0f} MiB), answered in {figures.answered_s:.2f} s, "
                    f"refused {figures.refused}"
                )
    return results


def report(
    results: Results,
    variants: list[Variant],
    frame_counts: list[int],
    frame_mib: float,
    text: str,
    sessions: int,
    via: str = "ws",
) -> None:
    what = "/ws frames" if via == "ws" else "POST /reset bodies"
    print(f"\n{sessions} small sessions stepping; {text} {what} of {frame_mib:g} MiB; medians")
    print(f"{'variant':>10} {'frames':>6} {'stall s':>8} {'quiet s':>8} {'rss x':>6} {'answered s':>10} {'refused':>7}")
    for frames in frame_counts:
        for variant in variants:
            runs = results.runs.get((variant.name, frames), [])
            if not runs:
                continue
            med = {
                name: statistics.median(getattr(run, name) for run in runs)
                for name in ("stall_s", "quiet_s", "rss_multiple", "answered_s", "refused")
            }
            print(
                f"{variant.name:>10} {frames:>6} {med['stall_s']:8.3f} {med['quiet_s']:8.3f} "
                f"{med['rss_multiple']:6.2f} "
                f"{med['answered_s']:10.2f} {med['refused']:7.0f}"
            )


def _variant(text: str) -> Variant:
    name, _, path = text.partition("=")
    return Variant(name, os.path.abspath(path) if path else None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.big_frames", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant", type=_variant, action="append", help="NAME or NAME=PYTHONPATH (repeatable; default: this checkout)"
    )
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 4], help="big frames sent at once (default: 1 4)")
    parser.add_argument("--frame-mib", type=float, default=90.0, help="size of each big frame in MiB (default 90)")
    parser.add_argument(
        "--text", choices=tuple(TEXTS), default="ascii", help="what the big string is made of (default ascii)"
    )
    parser.add_argument("--sessions", type=int, default=4, help="small sessions stepping meanwhile (default 4)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant and frame count (default 3)")
    parser.add_argument(
        "--via",
        choices=("ws", "http"),
        default="ws",
        help="send each big request as a /ws frame (default) or as a POST /reset body on a connection of its own",
    )
    args = parser.parse_args(argv)
    variants = args.variant or [Variant("ours", None)]
    results = measure(variants, args.frames, args.frame_mib, args.text, args.sessions, args.repeats, via=args.via)
    report(results, variants, args.frames, args.frame_mib, args.text, args.sessions, args.via)


if __name__ == "__main__":
    main()
