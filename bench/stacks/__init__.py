"""The stacks compared, one adapter module per stack.

Each adapter module exposes ``start_server(kind, ...) -> ServerProcess`` (a separate process
on a free loopback port) and a client: ``BACKEND`` plus ``open_session(url)`` for the shared
loops of ``bench.sessions``, and ``run_sessions(url, sessions, steps, ...)``. A stack that
cannot run here raises ``StackUnavailable`` with a one-line reason.
"""

from __future__ import annotations


class StackUnavailable(RuntimeError):
    """This stack (or part of it) cannot run in this environment; the message says why."""
