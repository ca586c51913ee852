"""``EnvServer``: Hypercorn's trio worker serving the Quart-Trio app, with ``/ws`` and
``/ws/ui`` routed to lean raw-ASGI handlers in front of it.

Use :meth:`EnvServer.serve` from trio, or :meth:`EnvServer.run_in_thread` from anywhere
else (asyncio tests, scripts, benchmarks): it runs trio and Hypercorn on a background
thread and shuts them down cleanly when the ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from ..environment import EnvFactory
from . import hypercorn_adapter
from .access.guard import admit, refuse
from .access.policy import Refused, route_path
from .asgi import AsgiReceive, AsgiSend
from .config import ServerConfig
from .context import ServerContext
from .execution.runner import thread_starter
from .gc_policy import rarer_collections
from .http.app import create_app
from .lifecycle import ServerPhase
from .mcp.dispatch import session_rpc
from .mcp.owners import SessionOwners
from .mcp.websocket import serve_mcp_socket
from .os_limits import listen_backlog, reserve_descriptor_table
from .session_registry import SharedCapacity
from .session_store import group_commit, open_session_store
from .sessions.attached import requested_session, serve_attached
from .sessions.base import serve_ws
from .sessions.handover import Handover, HandoverPolicy
from .sessions.kept import KeptSessions
from .sessions.resumable import negotiated, serve_resumable
from .switch_interval import switch_interval
from .ui.endpoint import OtherWorkers, serve_ui
from .validation import validation_handlers

__all__ = ["EnvServer", "RunningServer", "WorkerSeat"]


class ConnectionRouter(Protocol):
    """Where each accepted connection of a worker is served (:class:`~.workers.routing.OwnerRouter`)."""

    #: told of every connection handed to another worker (with where it went)
    on_hand_off: Callable[[Any], None]

    def wrap(self, handler: Any, listeners: list[Any], window: hypercorn_adapter.HeadWindow) -> tuple[Any, list[Any]]:
        """Hypercorn's connection handler and listeners, routed; request heads are waited for
        in ``window``."""
        ...


class WorkerSeat(Protocol):
    """This server's place among the worker processes of ``serve --workers N``
    (:class:`~.workers.role.WorkerRole`)."""

    @property
    def session_prefix(self) -> str: ...

    @property
    def capacity(self) -> SharedCapacity: ...

    @property
    def bind(self) -> str: ...

    @property
    def router(self) -> ConnectionRouter: ...

    @property
    def session_owners(self) -> SessionOwners:
        """The other workers' hosted sessions (``POST /mcp`` naming one is forwarded there)."""
        ...

    @property
    def other_dashboards(self) -> OtherWorkers:
        """The other workers' ``/ws/ui`` updates (a subscriber here sees every worker's sessions)."""
        ...


class _Router:
    """ASGI app: every HTTP request and WebSocket handshake passes the access guard first
    (:mod:`.access`); then WebSocket scopes for ``/ws`` and ``/ws/ui`` go to the raw
    handlers, the rest to the Quart app (HTTP routes, lifespan)."""

    def __init__(
        self,
        ctx: ServerContext,
        http_app: Any,
        kept: KeptSessions,
        handover: Handover | None,
        others: OtherWorkers | None,
    ) -> None:
        self._ctx = ctx
        self._http_app = http_app
        # Who serves a /ws connection: a hosted session's (?session_id=), a negotiated one
        # (EXT-NEG-1, decided once per connection) or a plain one; each given the store it
        # uses, and the MCP surface's answers to its mcp frames.
        rpc = session_rpc(ctx)
        self._attached = partial(serve_attached, ctx, kept, rpc)
        self._resumable = partial(serve_resumable, ctx, kept, rpc, handover)
        self._plain = serve_ws(ctx, rpc, validation_handlers(ctx, rpc))  # VAL-OPEN-1: telemetry when on
        self._mcp = serve_mcp_socket(ctx, rpc)
        self._ui = partial(serve_ui, ctx, kept, others)
        #: whether ``/ws`` sessions may run in their connection's task (the adapter is engaged)
        self.direct = True

    async def __call__(self, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
        if scope["type"] in ("http", "websocket"):
            decision = admit(self._ctx.config.access, scope)
            if isinstance(decision, Refused):
                return await refuse(scope, receive, send, decision)
        if scope["type"] == "websocket":
            path = scope["path"]
            if path == "/ws":
                return await self._ws_handler(scope)(scope, receive, send)
            if path == "/ws/ui":
                return await self._ui(scope, receive, send)
            if path == "/mcp":
                return await self._mcp(scope, receive, send)
        await self._http_app(scope, receive, send)

    def direct_websocket(self, scope: dict[str, Any]) -> hypercorn_adapter.DirectHandler | None:
        """``/ws`` sessions run in their connection's task (see
        :mod:`.hypercorn_adapter.direct_ws`), after the access guard, as every route."""
        if self.direct and route_path(scope["path"]) == "/ws":
            decision = admit(self._ctx.config.access, scope)
            if isinstance(decision, Refused):
                return partial(refuse, refused=decision)
            return self._ws_handler(scope)
        return None

    def _ws_handler(self, scope: dict[str, Any]) -> hypercorn_adapter.DirectHandler:
        """Who serves a ``/ws`` connection (see ``__init__``)."""
        if requested_session(scope) is not None:
            return self._attached
        return self._resumable if negotiated(scope) else self._plain


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class EnvServer:
    """Serves one environment factory over ``/ws``, ``/ws/ui`` and HTTP."""

    def __init__(
        self,
        factory: EnvFactory,
        config: ServerConfig | None = None,
        *,
        worker: WorkerSeat | None = None,
        tracer_provider: Any = None,
    ) -> None:
        """``worker``: this server is one worker process of ``serve --workers N``
        (:mod:`.workers`): it listens on the shared socket, routes connections to their
        owners and shares the capacity limit with the other workers. ``tracer_provider``:
        where the spans go when ``config.traces`` is on (an OpenTelemetry
        ``TracerProvider``; default: the global one)."""
        self.config = config or ServerConfig()
        self.worker = worker
        if worker is None:
            self.ctx = ServerContext(factory, self.config, tracer_provider=tracer_provider)
        else:
            self.ctx = ServerContext(
                factory,
                self.config,
                session_prefix=worker.session_prefix,
                shared_capacity=worker.capacity,
                tracer_provider=tracer_provider,
            )
            instruments = self.ctx.instruments
            worker.router.on_hand_off = lambda placement: instruments.connection_handed_over(placement.value)
        #: the sessions that outlive their connections (resumable, hosted), handed to the
        #: handlers that use them
        self.kept = KeptSessions(self.ctx)
        #: the resumable sessions kept in a session store beyond the process (EXT-HAND-1)
        self.handover: Handover | None = None
        if self.config.session_store is not None:
            policy = HandoverPolicy(self.config.durable, self.config.deterministic, self.config.snapshot_limit_bytes)
            self.handover = self.kept.keeper = Handover(self.ctx, self.kept, policy)
        owners = worker.session_owners if worker is not None else None
        others = worker.other_dashboards if worker is not None else None
        self.asgi = _Router(self.ctx, create_app(self.ctx, self.kept, owners), self.kept, self.handover, others)
        self.url: str | None = None
        self._stop = trio.Event()

    def _hypercorn_config(self) -> HypercornConfig:
        config = HypercornConfig()
        config.bind = [self.worker.bind if self.worker is not None else _bind(self.config.host, self.config.port)]
        config.backlog = listen_backlog(self.config.listen_backlog, self.ctx.registry.max_sessions)
        config.websocket_max_message_size = self.config.max_message_bytes  # WS-ERR-6
        config.websocket_ping_interval = None  # our sessions ping and watch the pongs
        config.graceful_timeout = self.config.shutdown_grace_s
        config.accesslog = None
        config.errorlog = logging.getLogger("hypercorn.error")  # plain logging, no own handler
        setattr(config, hypercorn_adapter.SEND_TIMEOUT_ATTR, self.config.send_timeout_s)
        setattr(config, hypercorn_adapter.INFLIGHT_BUDGET_ATTR, self.ctx.large_frames.budget)  # SRV-MEM-1
        return config

    def shutdown(self) -> None:
        """Ask a running :meth:`serve` to drain and stop (call from the server's trio thread);
        see :mod:`.lifecycle` for the sequence."""
        self._stop.set()

    async def _shutdown_trigger(self) -> None:
        await self._stop.wait()
        instruments, registry = self.ctx.instruments, self.ctx.registry
        if self.handover is not None:  # EXT-HAND-1: resumable sessions go to the store
            await self.handover.hand_over_all()
        await self.kept.end_all()  # MCP-SES-5, WS-SHUT-1: no new kept sessions; those nobody holds end now
        instruments.server_event(
            "server_draining", url=self.url, sessions=registry.sessions, drain_timeout_s=self.config.drain_timeout_s
        )
        await registry.shutdown(self.config.drain_timeout_s, self.config.shutdown_grace_s)  # WS-DRAIN-1, WS-SHUT-1
        instruments.server_event(
            "server_stopped", url=self.url, sessions_left=registry.sessions, envs_left=registry.live_envs
        )

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and serve until :meth:`shutdown` (or cancellation).

        ``task_status.started(url)`` reports the base URL once listening (the bound port
        when the configured port is 0).
        """
        self._stop = trio.Event()
        reserve_descriptor_table()
        with (
            hypercorn_adapter.install(plain=not self.config.hypercorn_patches) as engaged,
            rarer_collections(self.config.young_gc_threshold, self.config.full_gc_threshold),
            switch_interval(self.config.switch_interval_s),
        ):
            self.asgi.direct = engaged
            await self._serve(task_status, engaged)

    async def _serve(self, task_status: trio.TaskStatus[str], engaged: bool) -> None:
        if self.worker is not None and not engaged:
            raise RuntimeError("worker processes route connections through the Hypercorn adapter, which is not engaged")
        routing = (
            hypercorn_adapter.routed_connections(self.worker.router.wrap)
            if self.worker is not None
            else contextlib.nullcontext()
        )
        with routing:
            await self._serve_routed(task_status)

    async def _serve_routed(self, task_status: trio.TaskStatus[str]) -> None:
        async with (
            thread_starter(self.config.session_thread_idle_s),
            self._session_store(),
            trio.open_nursery() as nursery,
        ):
            binds = await nursery.start(self._serve_http)
            self.url = binds[0]
            self.ctx.registry.move_to(ServerPhase.SERVING)
            self.ctx.instruments.server_event("server_started", url=self.url)
            task_status.started(self.url)

    @contextlib.asynccontextmanager
    async def _session_store(self) -> AsyncIterator[None]:
        """The session store open while the server serves (``--session-store``), with its
        group commit; raises :class:`~.session_store.StoreUnavailable` (one line) when it
        cannot be opened."""
        url = self.config.session_store
        if url is None or self.handover is None:
            yield
            return
        store = await open_session_store(url)
        try:
            async with group_commit(store) as commit:
                self.handover.attach(store, commit)
                self.ctx.instruments.server_event("session_store_opened", store=store.name, durable=self.config.durable)
                yield
        finally:
            with trio.CancelScope(shield=True):
                await store.aclose()

    async def _serve_http(self, *, task_status: trio.TaskStatus[list[str]]) -> None:
        """Hypercorn, with the reaper of kept sessions beside it for as long as it serves."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.kept.reap)  # EXT-RES-2, MCP-SES-5
            if self.handover is not None:
                nursery.start_soon(self.handover.maintain)  # records nobody came back for
            await hypercorn_serve(
                cast(Any, self.asgi),  # a plain ASGI callable (Hypercorn's types name each event)
                self._hypercorn_config(),
                shutdown_trigger=self._shutdown_trigger,
                mode="asgi",
                task_status=task_status,
            )
            nursery.cancel_scope.cancel()

    def stats(self) -> dict[str, int]:
        """Active sessions, live environment instances, open connections (server thread)."""
        return self.ctx.registry.stats()

    def ui_stats(self) -> dict[str, int]:
        """``/ws/ui`` subscribers connected and updates that could not be encoded as they were (server thread)."""
        return self.ctx.hub.stats()

    def inflight_stats(self) -> dict[str, int]:
        """The budget of large inbound frames (``SRV-MEM-1``): ``bytes`` held now, frames
        ``waiting`` for room, frames ``refused`` so far (server thread)."""
        return self.ctx.large_frames.budget.stats()

    def stuck_envs(self) -> list[str]:
        """Environments whose ``close()`` outlived ``shutdown_grace_s`` and still runs, each
        as ``"EnvName (owner)"`` (``SRV-FAULT-3``); after :meth:`serve` returns, a non-empty
        list means the process holds threads it cannot stop."""
        return self.ctx.registry.stuck()

    @contextlib.contextmanager
    def run_in_thread(self, *, start_timeout: float = 30.0) -> Iterator[RunningServer]:
        """Run the server on a background thread for the duration of a ``with`` block.

        Yields a :class:`RunningServer` (``.url``, ``.stats()``). Leaving the block shuts the
        server down (connections closed with 1001, environments closed) and joins the thread;
        an error the server raised is re-raised there.
        """
        started: queue.SimpleQueue[tuple[str, trio.lowlevel.TrioToken] | BaseException] = queue.SimpleQueue()
        failure: list[BaseException] = []

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(self.serve)
                started.put((url, trio.lowlevel.current_trio_token()))

        def thread_main() -> None:
            try:
                trio.run(main)
            except BaseException as exc:  # reported to the caller's thread
                failure.append(exc)
                started.put(exc)

        thread = threading.Thread(target=thread_main, name="openenv-anyio-server", daemon=True)
        thread.start()
        try:
            first = started.get(timeout=start_timeout)
        except queue.Empty:
            raise RuntimeError(f"server did not start within {start_timeout} s") from None
        if isinstance(first, BaseException):
            thread.join()
            raise RuntimeError(f"server failed to start: {first!r}") from first
        url, token = first
        try:
            yield RunningServer(url=url, server=self, token=token)
        finally:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self.shutdown, trio_token=token)
            thread.join(timeout=self.config.drain_timeout_s + self.config.shutdown_grace_s * 3 + 10)
            if thread.is_alive():
                raise RuntimeError("server thread did not stop")
            if failure:
                raise RuntimeError(f"server failed: {failure[0]!r}") from failure[0]


@dataclass(frozen=True)
class RunningServer:
    """A server running on a background thread (see :meth:`EnvServer.run_in_thread`)."""

    url: str
    server: EnvServer
    token: trio.lowlevel.TrioToken

    @property
    def ws_url(self) -> str:
        """The ``/ws`` endpoint's URL."""
        return "ws" + self.url.removeprefix("http") + "/ws"

    def stats(self) -> dict[str, int]:
        """Active sessions, live environment instances, open connections."""
        return trio.from_thread.run_sync(self.server.stats, trio_token=self.token)

    def ui_stats(self) -> dict[str, int]:
        """See :meth:`EnvServer.ui_stats`."""
        return trio.from_thread.run_sync(self.server.ui_stats, trio_token=self.token)

    def inflight_stats(self) -> dict[str, int]:
        """See :meth:`EnvServer.inflight_stats`."""
        return trio.from_thread.run_sync(self.server.inflight_stats, trio_token=self.token)

    def stuck_envs(self) -> list[str]:
        """See :meth:`EnvServer.stuck_envs`."""
        return trio.from_thread.run_sync(self.server.stuck_envs, trio_token=self.token)
