"""The operating system's limits on how many connections a server takes at once, and the
one line that names what to raise.

A burst of sessions connecting together needs, of the kernel, a listen queue as long as the
burst (the listening socket's backlog, silently capped at ``net.core.somaxconn``; with SYN
cookies off, half-open connections are also bounded by ``net.ipv4.tcp_max_syn_backlog``) and,
of the process, a file descriptor per session (``RLIMIT_NOFILE``). A connection that finds
the accept queue full is dropped and retried by its client's kernel after 1, 3, 7 seconds:
past many clients' connect timeouts. :func:`shortfall` reads the limits (``/proc`` and
``getrlimit``) and says, in one line, which ones are below what the server is set for.

The kernel also grows a process's table of open files as it fills, by doubling it (at 256,
512, 1,024, ... descriptors), and in a process with more than one thread each growth waits
for an RCU grace period: milliseconds in which the accepting thread, and every session's
step behind it, stands still. :func:`reserve_descriptor_table` grows it once at start.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DESCRIPTOR_TABLE_CAP",
    "LISTEN_BACKLOG_FLOOR",
    "OPEN_FILES_RESERVE",
    "OsLimits",
    "listen_backlog",
    "reserve_descriptor_table",
    "shortfall",
]

#: The least listen backlog a server asks for (``listen_backlog=None`` and a session limit
#: below it, or none): Hypercorn's default of 100 overflows the kernel's accept queue when
#: thousands of sessions connect at once (bench/README.md, "Server CPU per connection").
LISTEN_BACKLOG_FLOOR = 4096
#: Descriptors a server process holds besides its sessions' sockets (listeners, the
#: workers' hand-off sockets, log files, the interpreter's own).
OPEN_FILES_RESERVE = 64

#: The most descriptors :func:`reserve_descriptor_table` makes room for (the table holds a
#: pointer each: 512 KiB at this size).
DESCRIPTOR_TABLE_CAP = 65_536

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


def reserve_descriptor_table(cap: int = DESCRIPTOR_TABLE_CAP) -> int:
    """Grow this process's table of open files now to the open-file limit, at most ``cap``
    descriptors, so that connections arriving later never wait for it to grow (see the module
    doc; the kernel never shrinks it). Returns the size made room for, 0 when it could not be
    done (no descriptor to spare)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    size = cap if soft == resource.RLIM_INFINITY else min(soft, cap)
    try:
        probe = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        os.close(fcntl.fcntl(probe, fcntl.F_DUPFD_CLOEXEC, size - 1))  # the lowest free one from there
    except OSError as exc:
        if exc.errno != errno.EMFILE:  # EMFILE: every one from there up is open, so the room is there
            return 0
    finally:
        os.close(probe)
    return size
