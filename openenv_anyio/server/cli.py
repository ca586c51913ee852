"""``openenv-anyio serve MODULE:ATTR``: serve an environment class or factory, or the app
upstream's ``create_app`` built (its models, session limit, idle timeout and mode then apply
unless an option says otherwise).

Loopback by default. SIGINT/SIGTERM drain and stop (``GET /ready`` answers 503, new
sessions are refused with 1013, requests being executed finish within ``--drain-timeout``,
then every connection is closed with 1001 and every environment closed) and the command
exits 0; when an environment's ``close()`` is still running after ``--shutdown-grace``
seconds, it exits 1 with one line naming it. Under ``--workers N``, SIGHUP replaces the
workers one at a time (a rolling restart, :mod:`.workers.supervisor`); without it, SIGHUP
is said in one line and changes nothing. A bad target is a one-line error.
Access (SECURITY.md): ``--token`` / ``OPENENV_TOKEN`` / ``--token-file``,
``--agent-tokens-file``, ``--allow-origin``, ``--expose-errors``; binding a non-loopback
address without a token prints a warning at start. ``$OPENENV_VALIDATION_TOKEN`` turns on
validation telemetry (PROTOCOL.md section 13; simulation mode only).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .observability.log_setup import LOG_FORMATS, LOG_LEVELS
from .observability.tracing import TRACE_EXPORTERS

__all__ = ["configure", "operator_token", "run"]

#: The environment variable that carries the operator token (``--token`` wins over it).
TOKEN_ENV = "OPENENV_TOKEN"
#: The environment variable that carries the validation token (``VAL-OPEN-1``), as upstream's
#: validator starts a server with it; read once and removed, so environment code never sees it.
VALIDATION_TOKEN_ENV = "OPENENV_VALIDATION_TOKEN"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="the environment: a class or factory (openenv_anyio.envs.guess:GuessNumberEnv), "
        "an openenv-core Environment subclass (mypkg.server:MyEnv), "
        "the app upstream OpenEnv's create_app built (my_env.server.app:app, what uvicorn was given) "
        "or a Gymnasium id (gymnasium:CartPole-v1)",
    )
    parser.add_argument(
        "--action-model",
        metavar="MODULE:Model",
        default=None,
        help="the Action model (a pydantic model) of an openenv-core environment whose step(self, action: Any) "
        "names none, as OpenEnvCoreEnv.wrap(Env, action_model=Model) takes it: actions are validated with it "
        "and step receives its instances",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    parser.add_argument("--port", type=_port, default=8000, help="port (0 picks a free one; default 8000)")
    parser.add_argument(
        "--max-concurrent-envs",
        type=int,
        default=None,
        metavar="N",
        help="session limit (default: the environment's own, else none; an openenv-core environment "
        "without SUPPORTS_CONCURRENT_SESSIONS = True allows 1). The limit in force is printed at start",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=None,
        metavar="S",
        help="close sessions idle this many seconds (default: an upstream app's session_timeout, else none)",
    )
    parser.add_argument(
        "--hosted-session-idle",
        type=float,
        default=600.0,
        metavar="S",
        help="end a session created over POST /mcp after S seconds with no request and no socket, "
        "when --session-timeout is not given (default 600)",
    )
    parser.add_argument(
        "--max-message-size-mb", type=float, default=100.0, metavar="M", help="inbound frame limit in MiB (default 100)"
    )
    parser.add_argument(
        "--max-inflight-bytes",
        type=int,
        default=None,
        metavar="B",
        help="bytes of large frames (over 1 MiB) read and parsed at once, all connections together; "
        "a frame beyond it waits up to 10 s, then is answered SERVER_BUSY "
        "(default: twice the frame limit; at least the frame limit)",
    )
    parser.add_argument(
        "--ping-interval",
        type=float,
        default=20.0,
        metavar="S",
        help="ping quiet connections after S seconds (default 20)",
    )
    parser.add_argument(
        "--ping-timeout",
        type=float,
        default=20.0,
        metavar="S",
        help="drop a connection whose pong is this late (default 20)",
    )
    parser.add_argument(
        "--resume-grace",
        type=float,
        default=60.0,
        metavar="S",
        help="keep a resumable session S seconds after its connection drops (default 60; 0: end at once)",
    )
    parser.add_argument(
        "--session-store",
        metavar="URL",
        help="keep resumable sessions where they outlive this process: a file path or sqlite:///PATH (SQLite), "
        "or redis://HOST:PORT/N. On SIGTERM the server writes its sessions there and closes their connections "
        "with 1012; a server started later on the same store takes each back when its client resumes "
        "(environments that snapshot, or replay: see --deterministic; others end)",
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="with --session-store: write each reset and step to the store before its answer leaves, so a crash "
        "(SIGKILL) loses nothing answered (group commits: slower steps)",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="with --session-store: the environment gives the same answers for the same reset arguments and "
        "actions, so its sessions come back by replay (each replayed answer checked) if it has no snapshot()",
    )
    parser.add_argument(
        "--snapshot-limit-mb",
        type=float,
        default=16.0,
        metavar="MB",
        help="with --session-store: the largest snapshot kept (default 16); a session whose snapshot is larger "
        "ends at a restart, and the log says so",
    )
    parser.add_argument(
        "--max-ui-subscribers",
        type=int,
        default=100,
        metavar="N",
        help="/ws/ui dashboards connected at once; more are closed with 1013 (default 100; 0: no limit)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=3.0,
        metavar="S",
        help="wait at most S seconds for running requests and each environment's close() (default 3); "
        "a close() still running after it makes the exit status 1",
    )
    parser.add_argument(
        "--max-stuck-closes",
        type=int,
        default=16,
        metavar="N",
        help="take no new session while N environments' close() outlived --shutdown-grace and still run, "
        "each holding a thread (default 16)",
    )
    parser.add_argument(
        "--listen-backlog",
        type=int,
        default=None,
        metavar="N",
        help="connections the listening socket queues before they are accepted (default: --max-concurrent-envs, "
        "at least 4096); the kernel caps it at net.core.somaxconn, and serve names that setting at start "
        "when it is lower",
    )
    parser.add_argument(
        "--mode",
        choices=("simulation", "production"),
        default=None,
        help="production leaves out the stateless HTTP /reset, /step and /state (agents use /ws and /mcp) "
        "and refuses validation telemetry ($OPENENV_VALIDATION_TOKEN); "
        "default: an upstream app's own mode, else simulation",
    )
    parser.add_argument(
        "--inline",
        action="store_true",
        default=None,
        help="run every sync environment call on the event loop (no worker thread)",
    )
    parser.add_argument(
        "--isolate",
        choices=("thread", "process"),
        default="thread",
        help="where each session's environment runs. thread (default): in the server process, on a worker thread "
        "per session (or inline): cheapest per step, but a segfault, os._exit or busy loop in environment code "
        "takes the whole server (every session) with it. process: in a process of its own per session: such a "
        "fault ends only that session (EXECUTION_ERROR, close 4410); costs a process per session, started as it "
        "opens, and an inter-process round trip per call (the user guide's docs/scaling.md has what they cost)",
    )
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=None,
        metavar="S",
        help="with --isolate process: an environment call (reset, step, state, a tool) running longer than S "
        "seconds fails, its process is killed and the session ends (close 4410); default: no limit",
    )
    access = parser.add_argument_group("access (see SECURITY.md)")
    access.add_argument(
        "--token",
        metavar="TOKEN",
        default=None,
        help="operator bearer token: every route but /health and /ready then needs 'Authorization: Bearer TOKEN' "
        f"(default: ${TOKEN_ENV}; prefer it or --token-file, a command line is visible to other local users)",
    )
    access.add_argument(
        "--token-file",
        metavar="PATH",
        type=Path,
        default=None,
        help="read the operator token from the first line of PATH",
    )
    access.add_argument(
        "--agent-tokens-file",
        metavar="PATH",
        type=Path,
        default=None,
        help="agent bearer tokens, one per line ('#' comments): they drive sessions, "
        "but on /ws/ui see other sessions without payloads",
    )
    access.add_argument(
        "--allow-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        help="also serve browser pages from ORIGIN (scheme://host[:port]; repeatable); other origins get 403",
    )
    access.add_argument(
        "--expose-errors",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="send an environment's exception type and clipped message to clients "
        "(default: only when listening on loopback); otherwise an error id, logged with the traceback",
    )
    parser.add_argument(
        "--workers",
        default="1",
        metavar="N",
        help="worker processes serving the one port (a number, or 'auto': one per core; default 1). "
        "Resumes reach the worker that owns the session; --max-concurrent-envs counts all workers together; "
        "SIGHUP replaces the workers one at a time (with --session-store their sessions carry on)",
    )
    parser.add_argument(
        "--web",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the dashboard page at /web (default: on when listening on loopback only; --no-web turns it off)",
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="while serving, the interpreter's thread switch interval (default: Python's, 0.005); "
        "0.05 serves thousands of blocking sessions with less CPU, but an env computing in "
        "Python holds the other sessions up to that long, and bursts of thousands of new "
        "sessions connected less often in time in our runs",
    )
    parser.add_argument(
        "--session-thread-idle",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a session's thread, once its session has closed, waits to serve the next session "
        "instead of ending (default 10; 0: each session's thread ends with it)",
    )
    parser.add_argument(
        "--full-gc-threshold",
        type=int,
        default=100,
        metavar="N",
        help="while serving, run full garbage collections at most every N middle-generation ones "
        "(default 100; Python's is 10; 0 leaves it alone)",
    )
    parser.add_argument(
        "--young-gc-threshold",
        type=int,
        default=10_000,
        metavar="N",
        help="while serving, collect the young generation every N net allocations "
        "(default 10000; Python's is 700; 0 leaves it alone)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="on SIGTERM/SIGINT, let requests being executed finish for up to S seconds "
        "before closing their connections (default 10)",
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="for writing an environment: serve afresh whenever a .py file under the current folder changes "
        "(a watcher restarts the server; open sessions end). Give a fixed --port",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="console",
        help="console: readable lines (default); json: one JSON object per line",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="least severe events logged (default info: session lifecycle and errors)",
    )
    parser.add_argument(
        "--no-metrics", dest="metrics", action="store_false", help="serve no /metrics and count nothing"
    )
    parser.add_argument(
        "--traces",
        choices=TRACE_EXPORTERS,
        default=None,
        help="send OpenTelemetry spans to the console or to an OTLP endpoint (OTEL_EXPORTER_OTLP_* variables); "
        "needs the otel extra",
    )


def _port(text: str) -> int:
    """A TCP port number for argparse (0 picks a free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (0 to 65535; 0 picks a free one)")
    return port


def _limit_line(factory: Any, configured: int | None) -> str:
    """The session limit in force and where it comes from (``WS-CAP-1``)."""
    from .context import session_cap_source, session_limit, session_limit_lowered

    limit = session_limit(factory, configured, warn=False)
    if limit is None:
        return "no session limit (--max-concurrent-envs N sets one)"
    sessions = "session" if limit == 1 else "sessions"
    refused = "more agents are refused with CAPACITY_REACHED"
    source = session_cap_source(factory)
    if session_limit_lowered(factory, configured) is not None:
        return (
            f"at most {limit} concurrent {sessions}: --max-concurrent-envs {configured} lowered to {limit}: "
            f"{source}; {refused}"
        )
    if configured is not None:
        return f"at most {limit} concurrent {sessions} (--max-concurrent-envs)"
    return f"at most {limit} concurrent {sessions}: {source}; {refused}"


#: the highest soft open-file limit ``serve`` asks for when the hard limit is unlimited
OPEN_FILES_CEILING = 1 << 20


def _raise_open_file_limit() -> tuple[int, int]:
    """Raise this process's soft open-file limit to its hard limit (worker processes inherit
    it): every session holds a socket, and the soft limit many systems start with (1,024)
    would refuse connections far below a large session limit. Returns (before, after)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # e.g. above the kernel's nr_open: keep what we have
            return soft, soft
        return soft, target
    return soft, soft


async def _probe_env(factory: Any, config: Any) -> None:
    """Build one environment as a session would and close it, so a factory that cannot
    build fails at start (under ``--isolate process`` this also starts the fork server).

    A ``close()`` that does not return within the shutdown grace is left running (its thread
    does not keep the process alive), as a session's would be at shutdown.
    """
    import trio

    from .context import open_env

    env = await open_env(factory, config)
    with trio.move_on_after(config.shutdown_grace_s):
        await env.aclose()


class _HeldEvent(logging.Filter):
    """Holds back the records of one structured-log ``event`` on ``logger`` while the block
    runs (when ``hold``), and emits them, in their order, when it is left: what the block
    says comes first."""

    def __init__(self, event: str, logger: logging.Logger, *, hold: bool) -> None:
        super().__init__()
        self.event, self.logger, self.hold = event, logger, hold
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, dict) and record.msg.get("event") == self.event:
            self.records.append(record)
            return False
        return True

    def __enter__(self) -> _HeldEvent:
        if self.hold:
            self.logger.addFilter(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.logger.removeFilter(self)
        records, self.records = self.records, []
        for record in records:
            self.logger.handle(record)


async def _serve_until_signalled(server: Any, log_format: str, limit_line: str) -> None:
    """Serve until SIGINT or SIGTERM, then drain and stop (a server of workers takes SIGHUP
    as a rolling restart and goes on; a server without says so and goes on). The console
    format also prints two plain lines (the URLs, the signal); JSON logs carry the same as
    events only."""
    import signal

    import trio

    from .observability.events import log_event

    plain = log_format == "console"
    held = _HeldEvent("server_started", logging.getLogger("openenv_anyio.server"), hold=plain)
    rolling = hasattr(server, "roll")  # --workers N: SIGHUP replaces the workers one at a time
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:
            with held:  # the console's banner first, then the server's own start event
                url = await nursery.start(server.serve)
                workers = getattr(server, "pids", None)
                if plain:
                    print(f"openenv-anyio: {limit_line}", file=sys.stderr, flush=True)
                    pids = "" if workers is None else " ".join(str(workers[slot]) for slot in sorted(workers))
                    detail = "" if workers is None else f", {len(workers)} workers (pids {pids})"
                    print(
                        f"openenv-anyio: serving on {url} (WebSocket {url.replace('http', 'ws', 1)}/ws){detail}",
                        file=sys.stderr,
                        flush=True,
                    )
                    if server.config.serves_web:
                        print(f"openenv-anyio: dashboard at {url}/web/", file=sys.stderr, flush=True)
                elif workers is not None:
                    log_event(logging.INFO, "server_started", None, url=url, workers=sorted(workers.values()))
            async for signum in signals:
                name = signal.Signals(signum).name
                if signum == signal.SIGHUP:
                    said = "replacing the workers one at a time"
                    if not rolling:  # its default would end the process, sessions and all
                        said = "a rolling restart needs --workers N; this server goes on"
                    if plain:
                        print(f"openenv-anyio: {name}: {said}", file=sys.stderr, flush=True)
                    log_event(logging.INFO, "signal_received", None, signal=name)
                    if rolling:
                        server.roll()
                    continue
                if plain:
                    print(f"openenv-anyio: {name}: draining, then shutting down", file=sys.stderr, flush=True)
                log_event(logging.INFO, "signal_received", None, signal=name)
                server.shutdown()
                break


def _token_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def operator_token(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """``--token``, else the first line of ``--token-file``, else ``$OPENENV_TOKEN``."""
    if args.token is not None and args.token_file is not None:
        raise ValueError("give --token or --token-file, not both")
    if args.token is not None:
        return str(args.token)
    if args.token_file is not None:
        lines = _token_lines(args.token_file)
        if not lines:
            raise ValueError(f"{args.token_file} holds no token")
        return lines[0]
    return environ.get(TOKEN_ENV) or None


#: ServerConfig's names for what the flags set: its messages are shown in the flags' words
_FLAGS = {
    "max_concurrent_envs": "--max-concurrent-envs",
    "session_timeout_s": "--session-timeout",
    "max_ui_subscribers": "--max-ui-subscribers",
    "shutdown_grace_s": "--shutdown-grace",
    "resume_grace_s": "--resume-grace",
    "drain_timeout_s": "--drain-timeout",
    "max_message_size_mb": "--max-message-size-mb",
    "max_inflight_bytes": "--max-inflight-bytes",
    "step_timeout_s": "--step-timeout",
    "full_gc_threshold": "--full-gc-threshold",
    "young_gc_threshold": "--young-gc-threshold",
    "switch_interval_s": "--switch-interval",
    "session_thread_idle_s": "--session-thread-idle",
    "session_store": "--session-store",
    "durable": "--durable",
    "snapshot_limit_bytes": "--snapshot-limit-mb",
    "listen_backlog": "--listen-backlog",
}
_PYTHON_ONLY = {
    "(or None for no limit)": "(leave the flag out for no limit)",
    "(or None for no timeout)": "(leave the flag out for no timeout)",
    "(or None to leave it alone)": "(0 leaves it alone)",
    "(or None for the session limit, at least 4096)": "(leave the flag out for the session limit, at least 4096)",
    ", or None for twice it": ", or leave the flag out for twice it",
}


def _in_flag_words(message: str) -> str:
    """A :class:`ServerConfig` message as the command line says it (flags, not field names)."""
    import re

    for python, words in _PYTHON_ONLY.items():
        message = message.replace(python, words)
    return re.sub(r"\b(" + "|".join(_FLAGS) + r")\b", lambda match: _FLAGS[match.group(1)], message)


def run(args: argparse.Namespace) -> int:
    if args.reload:
        if args.workers != "1":
            print("openenv-anyio serve: --reload serves one process: leave out --workers", file=sys.stderr)
            return 2
        from .reload import serve_with_reload

        typed = args._argv[args._argv.index("serve") + 1 :]
        return serve_with_reload([word for word in typed if word != "--reload"], Path.cwd())
    import trio

    from ..core.addresses import is_loopback_host
    from .config import ServerConfig
    from .env_server import EnvServer
    from .observability.log_setup import configure_logging
    from .observability.tracing import flush_exporter, install_exporter

    configure_logging(args.log_format, args.log_level)
    files_before, files = _raise_open_file_limit()
    try:
        if args.traces is not None:
            install_exporter(args.traces)
    except RuntimeError as exc:
        print(f"openenv-anyio serve: {exc}", file=sys.stderr)
        return 2
    try:
        from ..envs.loading import resolve_serve_target
        from .isolation import ProcessIsolated

        target = resolve_serve_target(args.target, action_model=args.action_model)
        local, app = target.factory, target.app
        factory: Any = ProcessIsolated(args.target, local) if args.isolate == "process" else local
        config = ServerConfig(
            host=args.host,
            port=args.port,
            max_concurrent_envs=args.max_concurrent_envs,
            session_timeout_s=args.session_timeout
            if args.session_timeout is not None or app is None
            else app.session_timeout_s,
            hosted_session_idle_s=args.hosted_session_idle,
            max_message_size_mb=args.max_message_size_mb,
            max_inflight_bytes=args.max_inflight_bytes,
            ping_interval_s=args.ping_interval or None,
            ping_timeout_s=args.ping_timeout or None,
            inline=args.inline,
            isolate=args.isolate,
            step_timeout_s=args.step_timeout,
            resume_grace_s=args.resume_grace,
            full_gc_threshold=args.full_gc_threshold or None,
            young_gc_threshold=args.young_gc_threshold or None,
            switch_interval_s=args.switch_interval,
            session_thread_idle_s=args.session_thread_idle,
            listen_backlog=args.listen_backlog,
            shutdown_grace_s=args.shutdown_grace,
            max_stuck_closes=args.max_stuck_closes,
            max_ui_subscribers=args.max_ui_subscribers or None,
            web=args.web,
            drain_timeout_s=args.drain_timeout,
            metrics=args.metrics,
            traces=args.traces is not None,
            mode=args.mode or ("production" if app is not None and app.production else "simulation"),
            allowed_origins=tuple(args.allow_origin),
            token=operator_token(args, os.environ),
            agent_tokens=tuple(_token_lines(args.agent_tokens_file)) if args.agent_tokens_file else (),
            expose_errors=args.expose_errors,
            validation_token=os.environ.pop(VALIDATION_TOKEN_ENV, None) or None,
            session_store=args.session_store,
            durable=args.durable,
            deterministic=args.deterministic,
            snapshot_limit_bytes=max(1, int(args.snapshot_limit_mb * 1024 * 1024)),
        )
        if (args.deterministic or args.snapshot_limit_mb != 16.0) and args.session_store is None:
            raise ValueError("--deterministic and --snapshot-limit-mb need --session-store")
        from .workers.supervisor import WorkerSupervisor, worker_count

        workers = worker_count(args.workers)
        if args.action_model is not None and (workers != 1 or args.isolate == "process"):
            raise ValueError(
                "--action-model serves one process: with --workers or --isolate process, serve a module "
                "holding Env = OpenEnvCoreEnv.wrap(MyEnv, action_model=MyAction) instead"
            )
    except ValueError as exc:
        print(f"openenv-anyio serve: {_in_flag_words(str(exc))}", file=sys.stderr)
        return 2
    from .. import startup
    from .execution.bound_env import FactoryFailure

    startup.done()  # from here on a Ctrl-C stops what has started (a probe env, then the server)
    try:
        trio.run(_probe_env, factory, config)
    except FactoryFailure as failure:
        print(f"openenv-anyio serve: {args.target}: {failure}", file=sys.stderr)
        return 2
    if config.session_store is not None:
        from .session_store import StoreUnavailable

        try:
            trio.run(_probe_store, config.session_store)
        except StoreUnavailable as exc:
            print(f"openenv-anyio serve: {exc}", file=sys.stderr)
            return 2
    if not is_loopback_host(config.host) and not config.access.tokens_required:
        print(
            f"openenv-anyio serve: WARNING: listening on {config.host} without a token: anyone who can reach "
            f"this address can drive and watch every session; set --token-file or ${TOKEN_ENV} (see SECURITY.md)",
            file=sys.stderr,
            flush=True,
        )
    _warn_of_os_limits(local, config)
    server: Any = (
        EnvServer(factory, config)
        if workers == 1
        else WorkerSupervisor.for_factory(args.target, local, config, workers)
    )
    try:
        limit_line = _limit_line(local, config.max_concurrent_envs)
        if files != files_before:
            limit_line += f"; open-file limit raised from {files_before} to {files}"
        trio.run(_serve_until_signalled, server, args.log_format, limit_line)
    except (OSError, BaseExceptionGroup) as exc:  # e.g. the port is taken
        os_error = _first_os_error(exc)
        if os_error is None:
            raise
        print(
            f"openenv-anyio serve: cannot listen on {config.host}:{config.port}: {os_error.strerror or os_error}",
            file=sys.stderr,
        )
        return 1
    finally:
        if args.traces is not None:
            flush_exporter()
    stuck = server.stuck_envs()
    if stuck:  # SRV-FAULT-3: their threads cannot be stopped; the process ends without them
        noun = "environment" if len(stuck) == 1 else "environments"
        print(
            f"openenv-anyio serve: {noun} {', '.join(stuck)} did not close within {config.shutdown_grace_s:g} s; "
            "exiting anyway",
            file=sys.stderr,
        )
        return 1
    return 0


async def _probe_store(url: str) -> None:
    """Open the session store once before serving, so one that cannot be opened is one line."""
    from .session_store import open_session_store

    store = await open_session_store(url)
    await store.aclose()


def _warn_of_os_limits(factory: Any, config: Any) -> None:
    """One line when the kernel's listen queue or the open-file limit is below what the
    server is set for (:mod:`.os_limits`); none otherwise."""
    from .context import session_limit
    from .os_limits import OsLimits, listen_backlog, shortfall

    limit = session_limit(factory, config.max_concurrent_envs, warn=False)
    line = shortfall(listen_backlog(config.listen_backlog, limit), limit, OsLimits.read())
    if line is not None:
        print(f"openenv-anyio serve: {line}", file=sys.stderr, flush=True)


def _first_os_error(exc: BaseException) -> OSError | None:
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first_os_error(inner)
            if found is not None:
                return found
    return None
