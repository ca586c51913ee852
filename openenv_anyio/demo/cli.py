"""``openenv-anyio demo``: serve an environment and run concurrent agents against it.

One trio nursery owns everything: the in-process server (unless ``--url`` names one), the
agents and the progress display. Ctrl-C (SIGINT, or SIGTERM) is received as a signal for the
whole run, never raised as KeyboardInterrupt inside it: the first cancels the nursery, which
closes every session and the server before the command returns; more while it stops are
only noted (a KeyboardInterrupt landing in the middle of that shutdown once ended in
``trio.TrioInternalError``).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["configure", "run"]

DEFAULT_ENV = "gymnasium:CartPole-v1"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Start a server on a free loopback port serving ENV (or use --url), run AGENTS "
        "agents concurrently for EPISODES episodes each, show progress and a summary."
    )
    parser.add_argument(
        "--env",
        default=DEFAULT_ENV,
        metavar="TARGET",
        help=f"environment to serve: gymnasium:ID or MODULE:ATTR (default {DEFAULT_ENV})",
    )
    parser.add_argument("--agents", type=_positive_int, default=4, help="concurrent agents (default 4)")
    parser.add_argument("--episodes", type=_positive_int, default=5, help="episodes per agent (default 5)")
    parser.add_argument("--max-steps", type=_positive_int, default=500, help="step limit per episode (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="base seed for resets and policies")
    parser.add_argument("--url", help="run the agents against this already running server instead")
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        default=None,
        help="with --url: bearer token for a server that requires one (default: $OPENENV_TOKEN); "
        "sent with every request and connection, never shown",
    )
    parser.add_argument("--no-progress", action="store_true", help="do not show live progress")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="keep the server and its dashboard (/web) up after the agents finish, until Ctrl-C; "
        "a Gymnasium env renders frames (render_mode='rgb_array') for the dashboard to draw",
    )


class _Summary:
    """The closing table of a run, once agents started: Ctrl-C still prints it."""

    table: Callable[[], str] | None = None


def run(args: argparse.Namespace) -> int:
    import trio

    from .. import startup
    from ..envs.loading import EnvTargetError

    startup.done()  # the run's own signal receiver stops the server and agents cleanly
    summary = _Summary()

    try:
        try:
            return trio.run(_main, args, summary)
        except BaseExceptionGroup as group:  # errors from inside the nursery come wrapped
            raise _only_leaf(group) from None
    except EnvTargetError as exc:
        print(f"openenv-anyio demo: {exc}", file=sys.stderr)
        return 2
    except _DemoError as exc:
        print(f"openenv-anyio demo: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Interrupted) as stop:
        if summary.table is not None:  # what finished before Ctrl-C is not lost
            print(summary.table(), flush=True)
        signum = stop.signum if isinstance(stop, _Interrupted) else signal.SIGINT
        how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        print(f"\nopenenv-anyio demo: {how}", file=sys.stderr)
        return 128 + signum  # as a shell reports a process ended by that signal


def _only_leaf(group: BaseExceptionGroup) -> BaseException:
    """The one exception inside nested groups, or the group itself when there are several."""
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
        leaf = leaf.exceptions[0]
    return leaf


class _DemoError(Exception):
    """A failure the user should see as one line."""


class _Interrupted(Exception):
    """SIGINT or SIGTERM stopped the run (after its clean shutdown): ``signum`` is which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _server_base(url: str) -> str:
    """The server's HTTP base URL from ``--url``: ``http(s)://``, ``ws(s)://`` or ``host:port``,
    the base or the agent channel's own URL (``.../ws``, what ``serve`` prints), as ``check``
    reads it. A URL the client cannot use is a :class:`_DemoError` naming why."""
    from ..client.urls import http_base_url

    try:
        return http_base_url(url)
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("invalid base_url"):  # the client's words for its argument
            reason = reason.split(": ", 1)[-1]
        raise _DemoError(f"--url {url!r}: {reason}") from None


async def _fetch_json(url: str, token: str | None) -> Any:
    import httpx

    from ..client import proxy_url_for

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(timeout=10.0, proxy=proxy_url_for(url, os.environ), trust_env=False) as http:
            response = await http.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise _DemoError(f"cannot reach {url}: {exc}") from exc
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


class _Stop:
    """What a signal means when it comes: an interruption while agents run, the way out of
    ``--watch`` once they are done."""

    signalled = False
    #: the first signal received (SIGINT or SIGTERM)
    signum = 0
    watching = False
    #: the exit status once the agents are done (a --watch ended by a signal returns it)
    code = 0


async def _main(args: argparse.Namespace, summary: _Summary) -> int:

    import trio

    stop = _Stop()
    codes: list[int] = []
    run_scope = trio.CancelScope()

    async def demo(guard: trio.CancelScope) -> None:
        with run_scope:
            codes.append(await _demo(args, summary, stop))
        guard.cancel()  # the run is over (done, or stopped by a signal): stop receiving

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(demo, nursery.cancel_scope)
            async for signum in signals:  # until the run is over, even while it shuts down
                if stop.signalled:
                    print("openenv-anyio demo: stopping already", file=sys.stderr, flush=True)
                    continue
                stop.signalled, stop.signum = True, signum
                run_scope.cancel()
    if stop.signalled and not stop.watching:
        raise _Interrupted(stop.signum)  # after the shutdown, outside the run's tasks: run() reports it
    return codes[0] if codes else stop.code


async def _demo(args: argparse.Namespace, summary: _Summary, stop: _Stop) -> int:
    import trio

    from .agents import AgentTally, run_agent
    from .policies import choose_policy
    from .report import ProgressLine, summary_table

    if args.url:
        _server_base(args.url)  # a bad URL is one line, before anything starts
    if args.token and not args.url:
        raise _DemoError("--token goes with --url (the demo's own server asks for no token)")
    token = (args.token or os.environ.get("OPENENV_TOKEN") or None) if args.url else None
    if token is not None:
        from ..client import EnvClient

        try:
            EnvClient(args.url, token=token)  # the client's own check, before anything is sent
        except ValueError as exc:
            raise _DemoError(str(exc)) from None
    async with trio.open_nursery() as nursery:
        if args.url:
            url = _server_base(args.url)
            env_name = url
        else:
            from ..envs.loading import resolve_env_target
            from ..server import EnvServer, ServerConfig
            from ..server.observability.log_setup import configure_logging

            # the agents' failures are in the summary: the server reports only its own, readably
            configure_logging("console", "error")

            factory = resolve_env_target(args.env, gymnasium_kwargs=_watch_kwargs(args))
            server = EnvServer(factory, ServerConfig(host="127.0.0.1", port=0))
            url = await nursery.start(server.serve)
            env_name = args.env
            print(f"dashboard: {url}/web/", file=sys.stderr)
        schema = await _fetch_json(f"{url}/schema", token) or {}
        metadata = await _fetch_json(f"{url}/metadata", token) or {}
        if args.url and not schema and not metadata and await _fetch_json(f"{url}/health", token) is None:
            raise _DemoError(f"{url} is not an OpenEnv server: GET /health, /metadata and /schema gave no JSON")
        env_name = f"{metadata.get('name', '')} {env_name}"
        print(f"serving {args.env} at {url}" if not args.url else f"using {url}", file=sys.stderr)

        tallies = [AgentTally(agent=i) for i in range(args.agents)]
        policies = [choose_policy(env_name, schema.get("action"), args.seed + t.agent) for t in tallies]
        heading = f"env: {env_name.strip()}  policy: {type(policies[0]).__name__ if policies else '-'}"
        progress = ProgressLine(tallies, args.episodes, sys.stderr)
        show = (lambda: progress.update()) if not args.no_progress else (lambda: None)
        started = time.perf_counter()
        summary.table = lambda: summary_table(tallies, time.perf_counter() - started, heading)
        async with trio.open_nursery() as agents:
            if not args.no_progress and sys.stderr.isatty():
                agents.start_soon(_redraw, progress)
            async with trio.open_nursery() as players:
                for tally, policy in zip(tallies, policies):
                    players.start_soon(
                        functools.partial(
                            run_agent,
                            url,
                            tally,
                            policy,
                            episodes=args.episodes,
                            max_steps=args.max_steps,
                            seed=args.seed + 1000 * tally.agent,
                            on_progress=show,
                            token=token,
                        )
                    )
            agents.cancel_scope.cancel()
        wall = time.perf_counter() - started
        if not args.no_progress:
            progress.update(final=True)
        if args.watch and not args.url:
            print(summary_table(tallies, wall, heading), flush=True)
            stop.code = 1 if any(t.errors for t in tallies) else 0
            stop.watching = True
            print(
                f"openenv-anyio demo: the server and its dashboard stay up at {url}/web/ until Ctrl-C",
                file=sys.stderr,
                flush=True,
            )
            await trio.sleep_forever()  # until _main's signal receiver cancels the run
        nursery.cancel_scope.cancel()
    print(summary_table(tallies, wall, heading))
    errors = sum(len(t.errors) for t in tallies)
    return 1 if errors else 0


def _watch_kwargs(args: argparse.Namespace) -> dict[str, Any] | None:
    """With ``--watch``, a Gymnasium env renders frames for the dashboard (when it can draw:
    classic-control rendering needs pygame, installed with the ``gym`` extra)."""
    if not args.watch or not args.env.startswith("gymnasium:"):
        return None
    import os

    # drawing into arrays needs neither a display nor sound, nor pygame's greeting
    for name, value in (
        ("SDL_VIDEODRIVER", "dummy"),
        ("SDL_AUDIODRIVER", "dummy"),
        ("PYGAME_HIDE_SUPPORT_PROMPT", "1"),
    ):
        os.environ.setdefault(name, value)
    try:
        import pygame  # noqa: F401
    except ImportError:
        return None
    return {"render_mode": "rgb_array"}


async def _redraw(progress: Any) -> None:
    import trio

    while True:
        progress.update()
        await trio.sleep(0.2)
