"""The environment's own process (``--isolate process``): builds one environment and answers
the server's requests about it until told to close, or until the server is gone.

It runs in a process forked for one session (:mod:`.env_process` starts it), imports the
serve target itself and serves it with the same :class:`~openenv_anyio.server.execution.bound_env.BoundEnv`
as a server does, on a trio loop of its own: sync calls run inline (this process has nothing
else to do), ``async def`` ones are awaited. Whatever the environment does to this process
(a segfault, ``os._exit``, a busy loop) the server sees as a closed channel or a late reply.

It never outlives the server, however the server ends (no orphans). Two guards, because the
process's parent is the fork server, not the server (so no parent-death signal reaches it):

- the lifeline: a second socket whose other end only the server holds and never writes to,
  set so the kernel signals this process (``O_ASYNC``, ``F_SETSIG``: SIGKILL) when it
  hangs up. The kernel sends it, so it ends the process even when environment code holds
  the GIL in a C call that never returns (no Python code of this process runs again);
- a thread that watches the channel and ends the process as soon as the server's end of it
  closes (the same, where the lifeline cannot be armed).
"""

from __future__ import annotations

import base64
import fcntl
import os
import select
import signal
import socket
import sys
import threading
import traceback
from typing import Any, Final, assert_never

import trio

from ...core import ProtocolError, RpcFailure
from ...environment import env_metadata, schema_of, takes_seed
from ...envs.loading import EnvTargetError, resolve_env_target
from ...restoration import RestoreWay, Snapshot, SnapshotError, SnapshotTooLarge, restore_way
from ..execution.bound_env import EnvironmentAborted, FactoryFailure, InProcessEnv
from ..execution.error_text import exception_text, printable
from ..execution.tools import EnvTools
from .messages import Fault, FaultKind, MessageReader, Op, encode_message

__all__ = ["ORPHAN_EXIT_STATUS", "run_child"]

#: The exit status of a process whose server went away (its channel closed under it).
ORPHAN_EXIT_STATUS = 70
_READ_SIZE = 1 << 16


#: ``fcntl``'s ``F_SETSIG``, Linux's own (10 there; the ``fcntl`` module of some Pythons does
#: not name it); None elsewhere, where the channel's watch thread is the only guard.
_F_SETSIG: Final[int | None] = getattr(fcntl, "F_SETSIG", 10 if sys.platform.startswith("linux") else None)


def run_child(channel: socket.socket, target: str, lifeline: socket.socket | None = None) -> None:
    """The process's main: serve ``target`` over ``channel`` (a connected stream socket);
    ``lifeline``: the socket whose hang-up kills this process (see the module doc)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal: the server drains, then ends us
    if lifeline is not None:
        _arm_lifeline(lifeline)
    _watch_server(channel)
    trio.run(_serve, channel, target)


def _arm_lifeline(lifeline: socket.socket) -> None:
    """Have the kernel SIGKILL this process when the server's end of ``lifeline`` closes
    (``O_ASYNC`` sends the owner a signal when the socket becomes readable; the server never
    writes to it, so only its hang-up does). Kept open for the process's life."""
    if _F_SETSIG is None:
        return
    fd = lifeline.fileno()
    try:
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGKILL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC | os.O_NONBLOCK)
    except OSError:
        return  # not on this platform: the channel's watch thread is the guard
    _lifelines.append(lifeline)
    try:  # the server may have gone before the lifeline was armed
        gone = lifeline.recv(1) == b""
    except BlockingIOError:
        gone = False
    except OSError:
        gone = True
    if gone:
        os._exit(ORPHAN_EXIT_STATUS)


_lifelines: list[socket.socket] = []  # held for the process's life (closing one would disarm it)


def _watch_server(channel: socket.socket) -> None:
    """End this process as soon as the server's end of ``channel`` closes (a daemon thread:
    it holds no lock the environment could need and runs while environment code does)."""
    fd = channel.fileno()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLRDHUP)  # hang-up only: requests do not wake it
        while True:
            for _, events in poller.poll():
                if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    os._exit(ORPHAN_EXIT_STATUS)

    threading.Thread(target=watch, name="openenv-server-watch", daemon=True).start()


def _fault(kind: FaultKind, exc: BaseException, **extra: Any) -> dict[str, Any]:
    text = exception_text(exc)
    name, _, message = text.partition(": ")
    trace = printable("".join(traceback.format_exception(exc)))
    return {"error": Fault(kind, name, message, trace, **extra).to_wire()}


def _failure_reply(exc: BaseException) -> dict[str, Any]:
    """The reply for a request the environment failed."""
    match exc:
        case EnvironmentAborted():
            return _fault(FaultKind.ABORTED, exc.cause)
        case ProtocolError():
            details = {"pointer": exc.pointer, "keyword": exc.keyword, "errors": exc.errors}
            return _fault(FaultKind.REFUSED, exc, code=exc.code.value, details=details)
        case RpcFailure():
            return _fault(FaultKind.RPC, exc, code=int(exc.code), details={"data": exc.data})
        case SnapshotTooLarge():
            return _fault(FaultKind.SNAPSHOT, exc, details={"size": exc.size, "limit": exc.limit})
        case SnapshotError():
            return _fault(FaultKind.SNAPSHOT, exc)
        case _:
            return _fault(FaultKind.RAISED, exc)


def describe(bound: InProcessEnv, tools: EnvTools) -> dict[str, Any]:
    """The ``ready`` message: what the server says about the environment without asking it."""
    env = bound.env
    return {
        "name": type(env).__qualname__,
        "metadata": env_metadata(env),
        "schemas": {
            key: schema_of(getattr(env, f"{key}_schema", None))
            for key in ("action", "observation", "reset_observation", "state")
        },
        "tools": tools.available(),
        "seeded": takes_seed(env),
        "restore": restore_way(env).value,
        # the environment's own word (RESTORE_WAY), which an operator's --deterministic does not change
        "restore_declared": isinstance(getattr(env, "RESTORE_WAY", None), RestoreWay),
    }


class _Channel:
    """The process's end of the channel: whole messages in and out."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._reader = MessageReader()

    async def send(self, message: dict[str, Any]) -> None:
        try:
            data = encode_message(message)
        except TypeError as exc:  # an answer JSON cannot hold: the request fails, the session goes on
            data = encode_message(_fault(FaultKind.RAISED, exc))
        await self._stream.send_all(data)

    async def receive(self) -> dict[str, Any] | None:
        """The next request; ``None`` once the server closed its end."""
        reader = self._reader
        while (message := reader.next()) is None:
            data = await self._stream.receive_some(max(_READ_SIZE, reader.wanted()))
            if not data:
                return None
            reader.feed(data)
        return message


async def _serve(channel: socket.socket, target: str) -> None:
    link = _Channel(trio.SocketStream(trio.socket.from_stdlib_socket(channel)))
    try:
        bound = await InProcessEnv.create(resolve_env_target(target), inline=True)
    except FactoryFailure as failure:
        await link.send(
            {"failed": {**_fault(FaultKind.RAISED, failure.cause)["error"], "factory_name": failure.factory_name}}
        )
        return
    except EnvTargetError as exc:
        await link.send({"failed": {**_fault(FaultKind.RAISED, exc)["error"], "factory_name": target}})
        return
    tools = EnvTools(bound)
    await link.send({"ready": describe(bound, tools)})
    while True:
        request = await link.receive()
        if request is None:  # the server let go without a close: close the environment anyway
            await bound.aclose()
            return
        op = Op(request["op"])
        if op is Op.CLOSE:
            await bound.aclose()  # its errors are logged here, as a server would
            await link.send({"ok": None})
            return
        try:
            reply = {"ok": await _answer(bound, tools, op, request)}
        except Exception as exc:
            reply = _failure_reply(exc)
        await link.send(reply)


async def _answer(bound: InProcessEnv, tools: EnvTools, op: Op, request: dict[str, Any]) -> Any:
    match op:
        case Op.RESET:
            lifted, state = await bound.reset(request.get("kwargs") or {})
            return {**lifted.frame_data(), "state": state}
        case Op.STEP:
            # checked by the server already; checked again here to build a declared model's instance
            lifted = await bound.step(bound.action_check(request["action"], prefix=""))
            return lifted.frame_data()
        case Op.STATE:
            return await bound.state()
        case Op.LIST_TOOLS:
            return await tools.listing()
        case Op.CALL_TOOL:
            return await tools.call(str(request["name"]), request.get("arguments") or {})
        case Op.SNAPSHOT:
            snapshot = await bound.snapshot(int(request["limit"]))
            return {"json": snapshot.is_json, "data": base64.b64encode(snapshot.data).decode("ascii")}
        case Op.RESTORE:
            await bound.restore(Snapshot(base64.b64decode(request["data"]), bool(request["json"])))
            return None
        case Op.CLOSE:
            raise AssertionError("close is answered by the serving loop")
        case _:
            assert_never(op)
