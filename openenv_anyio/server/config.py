"""The server's settings, in one immutable value."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.addresses import is_loopback_host
from ..restoration import MAX_SNAPSHOT_BYTES
from .access.policy import AccessPolicy
from .execution.runner import IDLE_THREAD_S

__all__ = ["ISOLATION_MODES", "SERVER_MODES", "ServerConfig"]

#: ``simulation`` serves the stateless HTTP simulation routes, ``production`` does not (HTTP-10).
SERVER_MODES = ("simulation", "production")
#: Where a session's environment runs: a thread of the server, or a process of its own (SRV-ISO-1).
ISOLATION_MODES = ("thread", "process")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How an :class:`~openenv_anyio.server.EnvServer` listens and runs sessions.

    - ``port=0`` binds a free port (the bound URL is reported once listening).
    - ``max_concurrent_envs``: session limit (``None``: unlimited), ``WS-CAP-1``.
    - ``session_timeout_s``: close a session idle this long with 4408 (``WS-IDLE-1``);
      time spent executing a request never counts (``WS-IDLE-2``).
    - ``max_message_size_mb``: inbound frame limit in MiB, over it close 1009 (``WS-ERR-6``).
    - ``max_inflight_bytes``: bytes of large inbound frames (above 1 MiB) the server reads and
      parses at once, all connections together (``SRV-MEM-1``); ``None``: twice the frame
      limit. At least the frame limit, so every frame the limit allows can be taken.
    - ``inflight_wait_s``: how long a large frame waits for room within that bound before it
      is dropped unread and answered with ``SERVER_BUSY`` (its connection reads nothing
      meanwhile).
    - ``ping_interval_s`` / ``ping_timeout_s``: ping a connection quiet this long, and drop
      it when the pong does not come within the timeout (``WS-PING-1``). ``None`` disables.
    - ``send_timeout_s``: drop a connection whose peer takes no data for this long (it
      stopped reading); ``None`` waits forever.
    - ``inline``: ``None`` follows each environment's ``NON_BLOCKING``; ``True`` runs every
      sync call on the event loop; ``False`` always uses the session's worker thread.
    - ``validate_outbound``: check every frame the server sends against the spec (tests).
    - ``action_log_size``: actions kept per session for ``/ws/ui`` updates.
    - ``max_ui_subscribers``: ``/ws/ui`` connections at once; beyond it a subscriber is
      closed with 1013 (``UI-6``). Each step offers its update to every subscriber, so
      this bounds what dashboards cost a stepping session. ``None``: unlimited.
    - ``drain_timeout_s``: on shutdown, how long requests being executed may run on while
      new sessions are refused (``WS-DRAIN-1``); those still running then are abandoned and
      their connections closed with 1001.
    - ``shutdown_grace_s``: how long a shutdown then waits for connections to end, and how
      long any session waits for its environment's ``close()`` (``SRV-FAULT-3``).
    - ``hosted_session_idle_s``: a session created over HTTP (``openenv/session/create``)
      with no socket attached and no request for this long ends (``MCP-SES-5``);
      ``session_timeout_s``, when set, is used instead. ``None``: only ``session_timeout_s``.
    - ``max_stuck_closes``: environments whose ``close()`` outlived ``shutdown_grace_s`` and
      still runs (each keeps its thread: a thread cannot be stopped) that the server holds
      before it takes no new session (refused as at capacity, 1013) until one returns
      (``SRV-FAULT-3``); ``None``: no bound.
    - ``resume_grace_s``: how long a session of a connection that negotiated the resume
      extension is kept after the connection drops (``EXT-RES-2``); it keeps its capacity
      slot meanwhile (``EXT-RES-3``). 0 ends it at once.
    - ``mode``: ``"simulation"`` (default) serves the stateless HTTP ``/reset``, ``/step``
      and ``/state``; ``"production"`` leaves them out (``HTTP-10``), as upstream OpenEnv's
      production mode does: agents use ``/ws`` and the MCP surface only.
    - ``isolate``: ``"thread"`` (default) runs environments in the server process (a
      worker thread per session, or inline); ``"process"`` runs each session's environment
      in a process of its own (``SRV-ISO-1``): a crash, ``os._exit`` or busy loop there ends
      only that session (close 4410). The factory must be importable by name (a
      :class:`~openenv_anyio.server.isolation.ProcessIsolated`, or a top-level class or function).
    - ``step_timeout_s``: with ``isolate="process"``, an environment call (reset, step,
      state, a tool) running longer than this fails and its process is killed (``SRV-ISO-3``);
      ``None`` waits forever. Threads cannot be stopped, so it needs process isolation.
    - ``full_gc_threshold``: while serving, the process's oldest-generation collection
      threshold is at least this (``gc.set_threshold``'s third value; Python's default is
      10): full collections walk every object of every session, and with thousands of
      sessions they dominated the server's CPU. ``None`` leaves it alone.
    - ``young_gc_threshold``: while serving, the young generation's collection threshold
      is at least this (``gc.set_threshold``'s first value; Python's default is 700): in
      a burst of thousands of sessions each middle-generation pass walks the objects of
      the sessions just opened, and with fewer of them more short-lived objects die
      unwalked (``gc_policy``). ``None`` leaves it alone.
    - ``switch_interval_s``: while serving, the interpreter's thread switch interval
      (``sys.setswitchinterval``; Python's default is 0.005). Thousands of session threads
      of a blocking environment waking together take the GIL from the event loop's thread
      at every hand-over; a longer interval (such as 0.05) lets the loop keep up
      (docs/operating.md, "Thousands of blocking sessions"). A session thread running pure
      Python longer than the interval holds every other session up to the interval, and in
      bursts of thousands of new sessions fewer connected in time: for environments that
      compute, leave it. ``None`` (default) leaves the interpreter's.
    - ``session_thread_idle_s``: how long a session's thread, once its session has closed,
      waits for the next session to open and serve it (sessions opened one after another,
      or a trainer's next round, then start no thread); ``0``: a session's thread ends with
      it (thread-local state an environment leaves behind then never meets another session).
    - ``listen_backlog``: connections the listening socket queues before they are accepted
      (the kernel caps it at ``net.core.somaxconn``; :mod:`.os_limits`); ``None``: the session
      limit, at least 4,096, so a burst of every allowed session at once is queued, not dropped.
    - ``web``: serve the dashboard page at ``/web`` (``UI-9``); ``None`` serves it when the
      server listens on loopback only.
    - ``hypercorn_patches``: serve through the Hypercorn adapter's patches (the fast ``/ws``
      path, pings whose pongs are seen, guarded writes; ``server/hypercorn_adapter``).
      ``False`` serves a plain ASGI application on stock Hypercorn: correct, slower, no
      pings, and the peer's close is seen only when the connection ends.
    - ``metrics``: keep the Prometheus metrics served on ``GET /metrics`` (``False``: the
      endpoint answers 404 and nothing is counted).
    - ``traces``: open OpenTelemetry spans for sessions and requests (needs the ``otel``
      extra); they go to the tracer provider given to the server, else the global one.
    - ``allowed_origins``: browser origins (``scheme://host[:port]``) served besides the
      server's own loopback origin (``SEC-ORIGIN-1``); every other browser is refused.
    - ``token``: the operator's bearer token; when it or ``agent_tokens`` is set, every
      route but ``/health`` and ``/ready`` needs one (``SEC-TOKEN-1``). ``agent_tokens`` drive sessions but
      see other sessions' payloads on ``/ws/ui`` only with their credentials (``SEC-UI-1``).
      Neither appears in ``repr``.
    - ``expose_errors``: an environment's exception reaches clients as its type and clipped
      message (``True``) or as an opaque error id the server logs with the traceback
      (``False``); ``None`` (default) exposes on a loopback address only (``SEC-ERR-1``).
    - ``validation_token``: the token a validator opens a session's telemetry with
      (``validation_open``, PROTOCOL.md section 13); ``None`` (default): telemetry is off.
      ``openenv-anyio serve`` reads ``$OPENENV_VALIDATION_TOKEN``, as upstream's server does.
      Simulation mode only; not in ``repr``.
    - ``session_store``: where resumable sessions outlive the server process (``EXT-HAND-1``):
      a file path or ``sqlite:///PATH`` (SQLite), or ``redis://HOST:PORT/N``. A draining
      server writes its sessions there and closes their connections with 1012; a server on
      the same store takes each back when its client resumes. ``None``: sessions end with
      the server. Not in ``repr`` (a Redis URL may hold a password).
    - ``durable``: with a store, write each reset's and step's record before its answer
      leaves (``EXT-HAND-4``): a crash loses nothing answered.
    - ``deterministic``: the operator's word that the environment is deterministic: with a
      store, sessions of an environment with no way of its own are brought back by replay.
    - ``snapshot_limit_bytes``: the largest snapshot a session store keeps; a larger one
      ends its session at a hand-over (said in the logs).
    """

    host: str = "127.0.0.1"
    port: int = 0
    max_concurrent_envs: int | None = None
    session_timeout_s: float | None = None
    max_message_size_mb: float = 100.0
    max_inflight_bytes: int | None = None
    inflight_wait_s: float = 10.0
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    send_timeout_s: float | None = 20.0
    inline: bool | None = None
    validate_outbound: bool = False
    action_log_size: int = 50
    max_ui_subscribers: int | None = 100
    drain_timeout_s: float = 10.0
    shutdown_grace_s: float = 3.0
    max_stuck_closes: int | None = 16
    hosted_session_idle_s: float | None = 600.0
    resume_grace_s: float = 60.0
    full_gc_threshold: int | None = 100
    young_gc_threshold: int | None = 10_000
    switch_interval_s: float | None = None
    session_thread_idle_s: float = IDLE_THREAD_S
    listen_backlog: int | None = None
    web: bool | None = None
    hypercorn_patches: bool = True
    metrics: bool = True
    traces: bool = False
    mode: str = "simulation"
    isolate: str = "thread"
    step_timeout_s: float | None = None
    allowed_origins: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)
    agent_tokens: tuple[str, ...] = field(default=(), repr=False)
    expose_errors: bool | None = None
    validation_token: str | None = field(default=None, repr=False)
    session_store: str | None = field(default=None, repr=False)
    durable: bool = False
    deterministic: bool = False
    snapshot_limit_bytes: int = MAX_SNAPSHOT_BYTES
    access: AccessPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_concurrent_envs is not None and self.max_concurrent_envs < 1:
            raise ValueError("max_concurrent_envs must be at least 1 (or None for no limit)")
        if self.session_timeout_s is not None and self.session_timeout_s <= 0:
            raise ValueError("session_timeout_s must be positive (or None for no timeout)")
        if self.max_ui_subscribers is not None and self.max_ui_subscribers < 1:
            raise ValueError("max_ui_subscribers must be at least 1 (or None for no limit)")
        if self.shutdown_grace_s <= 0:
            raise ValueError("shutdown_grace_s must be positive")
        if self.hosted_session_idle_s is not None and self.hosted_session_idle_s <= 0:
            raise ValueError("hosted_session_idle_s must be positive (or None for no default expiry)")
        if self.max_stuck_closes is not None and self.max_stuck_closes < 1:
            raise ValueError("max_stuck_closes must be at least 1 (or None for no bound)")
        if self.resume_grace_s < 0:
            raise ValueError("resume_grace_s must be 0 or more")
        if self.drain_timeout_s < 0:
            raise ValueError("drain_timeout_s must be 0 or more")
        if self.max_message_size_mb <= 0:
            raise ValueError("max_message_size_mb must be positive")
        if self.max_inflight_bytes is not None and self.max_inflight_bytes < self.max_message_bytes:
            raise ValueError(
                f"max_inflight_bytes must be at least the frame limit ({self.max_message_bytes} bytes, "
                "max_message_size_mb), or None for twice it"
            )
        if self.inflight_wait_s < 0:
            raise ValueError("inflight_wait_s must be 0 or more")
        if self.mode not in SERVER_MODES:
            raise ValueError(f"mode must be one of {', '.join(SERVER_MODES)}, not {self.mode!r}")
        if self.isolate not in ISOLATION_MODES:
            raise ValueError(f"isolate must be one of {', '.join(ISOLATION_MODES)}, not {self.isolate!r}")
        if self.step_timeout_s is not None:
            if self.step_timeout_s <= 0:
                raise ValueError("step_timeout_s must be positive (or None for no timeout)")
            if self.isolate != "process":
                raise ValueError("a step timeout needs process isolation (a thread running a step cannot be stopped)")
        if self.full_gc_threshold is not None and self.full_gc_threshold < 1:
            raise ValueError("full_gc_threshold must be at least 1 (or None to leave it alone)")
        if self.young_gc_threshold is not None and self.young_gc_threshold < 1:
            raise ValueError("young_gc_threshold must be at least 1 (or None to leave it alone)")
        if self.switch_interval_s is not None and not self.switch_interval_s > 0:
            raise ValueError("switch_interval_s must be positive (leave it unset for the interpreter's)")
        if not self.session_thread_idle_s >= 0:
            raise ValueError("session_thread_idle_s must be 0 or more (0: a session's thread ends with it)")
        if self.session_store is not None and not self.session_store.strip():
            raise ValueError("session_store is empty: give a file path, sqlite:///PATH or redis://HOST:PORT/N")
        if self.durable and self.session_store is None:
            raise ValueError("durable needs a session_store")
        if self.snapshot_limit_bytes < 1:
            raise ValueError("snapshot_limit_bytes must be at least 1")
        if self.listen_backlog is not None and self.listen_backlog < 1:
            raise ValueError("listen_backlog must be at least 1 (or None for the session limit, at least 4096)")
        policy = AccessPolicy.build(
            allowed_origins=self.allowed_origins,
            operator_tokens=() if self.token is None else (self.token,),
            agent_tokens=self.agent_tokens,
        )
        object.__setattr__(self, "access", policy)

    @property
    def errors_exposed(self) -> bool:
        """Whether exception text reaches clients (``expose_errors``, resolved)."""
        return is_loopback_host(self.host) if self.expose_errors is None else self.expose_errors

    @property
    def serves_web(self) -> bool:
        """Whether ``/web`` is served (``web``, or by default: listening on loopback only)."""
        return is_loopback_host(self.host) if self.web is None else self.web

    @property
    def production(self) -> bool:
        """Whether the simulation routes are left out (``HTTP-10``)."""
        return self.mode == "production"

    @property
    def validation_telemetry(self) -> bool:
        """Whether sessions may open validation telemetry (``VAL-OPEN-1``): a validation
        token is set and the server runs in simulation mode."""
        return bool(self.validation_token) and not self.production

    @property
    def max_message_bytes(self) -> int:
        """The inbound frame limit in bytes."""
        return int(self.max_message_size_mb * 1024 * 1024)

    @property
    def inflight_limit_bytes(self) -> int:
        """The bound on bytes of large inbound frames in flight (``max_inflight_bytes``, resolved)."""
        return 2 * self.max_message_bytes if self.max_inflight_bytes is None else self.max_inflight_bytes
