"""The operating system's limits on how many connections a server takes at once, and the
one line that names what to raise.

A burst of sessions connecting together needs, of the kernel, a listen queue as long as the
burst (the listening socket's backlog, silently capped at ``net.core.somaxconn``; with SYN
cookies off, half-open connections are also bounded by ``net.ipv4.tcp_max_syn_backlog``) and,
of the process, a file descriptor per session (``RLIMIT_NOFILE``). A connection that finds
the accept queue full is dropped and retried by its client's kernel after 1, 3, 7 seconds:
past many clients' connect timeouts. :func:`shortfall` reads the limits (``/proc`` and
``getrlimit``) and says, in one line, which ones are below what the server is set for.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LISTEN_BACKLOG_FLOOR", "OPEN_FILES_RESERVE", "OsLimits", "listen_backlog", "shortfall"]

#: The least listen backlog a server asks for (``listen_backlog=None`` and a session limit
#: below it, or none): Hypercorn's default of 100 overflows the kernel's accept queue when
#: thousands of sessions connect at once (bench/README.md, "Server CPU per connection").
LISTEN_BACKLOG_FLOOR = 4096
#: Descriptors a server process holds besides its sessions' sockets (listeners, the
#: workers' hand-off sockets, log files, the interpreter's own).
OPEN_FILES_RESERVE = 64

_PROC = Path("/proc/sys/net")


def listen_backlog(configured: int | None, max_sessions: int | None) -> int:
    """The listen backlog to ask for: ``configured``, else the session limit (a burst of every
    allowed session at once), at least :data:`LISTEN_BACKLOG_FLOOR`."""
    if configured is not None:
        return configured
    return max(LISTEN_BACKLOG_FLOOR, max_sessions or 0)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True, slots=True)
class OsLimits:
    """The limits read at start (``None``: not readable here, e.g. not Linux)."""

    somaxconn: int | None
    tcp_max_syn_backlog: int | None
    tcp_syncookies: int | None
    open_files: int | None

    @classmethod
    def read(cls) -> OsLimits:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return cls(
            somaxconn=_read_int(_PROC / "core" / "somaxconn"),
            tcp_max_syn_backlog=_read_int(_PROC / "ipv4" / "tcp_max_syn_backlog"),
            tcp_syncookies=_read_int(_PROC / "ipv4" / "tcp_syncookies"),
            open_files=None if soft == resource.RLIM_INFINITY else soft,
        )


def shortfall(backlog: int, max_sessions: int | None, limits: OsLimits) -> str | None:
    """One line naming each limit below what ``backlog`` and ``max_sessions`` need, and how to
    raise it; ``None`` when none is."""
    short: list[str] = []
    if limits.somaxconn is not None and backlog > limits.somaxconn:
        short.append(
            f"listen backlog {backlog} is capped at net.core.somaxconn={limits.somaxconn} "
            f"(raise it: sysctl -w net.core.somaxconn={backlog})"
        )
    # With SYN cookies on (1, the default) a full SYN queue sends cookies instead of dropping.
    if limits.tcp_syncookies == 0 and limits.tcp_max_syn_backlog is not None and backlog > limits.tcp_max_syn_backlog:
        short.append(
            f"net.ipv4.tcp_max_syn_backlog={limits.tcp_max_syn_backlog} with SYN cookies off "
            f"(raise it: sysctl -w net.ipv4.tcp_max_syn_backlog={backlog})"
        )
    if max_sessions is not None and limits.open_files is not None:
        needed = max_sessions + OPEN_FILES_RESERVE
        if limits.open_files < needed:
            short.append(
                f"open-file limit {limits.open_files} is below the {needed} that {max_sessions} sessions need "
                "(raise ulimit -n, or LimitNOFILE= of a systemd unit)"
            )
    if not short:
        return None
    return "WARNING: connections beyond these OS limits are dropped or refused: " + "; ".join(short)
