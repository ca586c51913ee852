"""The listening socket queues enough pending connections for bursts of sessions, the
process has room for their descriptors from the start, and ``serve`` names the OS limit to
raise when the kernel's is lower."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenv_anyio.server.os_limits import (
    DESCRIPTOR_TABLE_CAP,
    LISTEN_BACKLOG_FLOOR,
    OPEN_FILES_RESERVE,
    OsLimits,
    listen_backlog,
    shortfall,
)

from .envs import InlineTracked
from .test_cli import serve_command, started, stop

needs_ss = pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss to read the listen backlog")


def _somaxconn() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


def _listen_backlog(url: str) -> int:
    """The backlog of the socket listening at ``url``, as the kernel reports it (``ss``)."""
    port = urlsplit(url).port
    assert port is not None
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.split()
    return int(out[2])  # State Recv-Q Send-Q ...: Send-Q is the backlog of a listening socket


@needs_ss
def test_listen_backlog_takes_thousands_of_pending_connections(serve) -> None:
    with serve(InlineTracked) as server:
        assert _listen_backlog(server.url) == min(LISTEN_BACKLOG_FLOOR, _somaxconn())
    assert LISTEN_BACKLOG_FLOOR >= 2048  # what uvicorn uses; Hypercorn's default is 100


@needs_ss
def test_the_listen_backlog_follows_the_session_limit_and_the_setting(serve) -> None:
    somaxconn = _somaxconn()
    with serve(InlineTracked, max_concurrent_envs=LISTEN_BACKLOG_FLOOR * 2) as server:
        assert _listen_backlog(server.url) == min(LISTEN_BACKLOG_FLOOR * 2, somaxconn)
    with serve(InlineTracked, listen_backlog=300) as server:
        assert _listen_backlog(server.url) == min(300, somaxconn)


@needs_ss
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_backlog_over_somaxconn_is_named_in_one_line_at_start(workers: str) -> None:
    """The real ``/proc`` value: a backlog one above it is capped by the kernel, and ``serve``
    says which sysctl to raise, once (the workers share the supervisor's socket)."""
    somaxconn = _somaxconn()
    process, url, lines = started(
        "openenv_anyio.envs.echo:EchoEnv", "--port", "0", "--workers", workers, "--listen-backlog", str(somaxconn + 1)
    )
    try:
        assert _listen_backlog(url) == somaxconn
    finally:
        stop(process)
    warned = [line for line in lines if "somaxconn" in line]
    assert len(warned) == 1, lines
    assert warned[0].startswith("openenv-anyio serve: WARNING:")
    assert f"net.core.somaxconn={somaxconn}" in warned[0]
    assert f"sysctl -w net.core.somaxconn={somaxconn + 1}" in warned[0]


def _descriptor_table_size(pid: int | str = "self") -> int:
    """How many descriptors the process's table has room for now (``FDSize``)."""
    found = re.search(r"^FDSize:\s+(\d+)$", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    assert found is not None
    return int(found.group(1))


def _room_expected() -> int:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return DESCRIPTOR_TABLE_CAP if soft == resource.RLIM_INFINITY else min(soft, DESCRIPTOR_TABLE_CAP)


needs_room = pytest.mark.skipif(_room_expected() <= 256, reason="an open-file limit this low leaves nothing to reserve")


@needs_room
@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_server_process_has_room_for_its_connections_from_the_start(workers: str) -> None:
    """The kernel grows a descriptor table by doubling it, each time after an RCU grace period
    in a process with threads: connections arriving must not be the ones that wait for it."""
    process, _, _ = started("openenv_anyio.envs.echo:EchoEnv", "--port", "0", "--workers", workers)
    try:
        tasks = Path(f"/proc/{process.pid}/task").iterdir()
        children = [pid for task in tasks for pid in (task / "children").read_text().split()]
        serving = children if workers == "2" else [str(process.pid)]
        assert len(serving) == int(workers)
        for pid in serving:
            assert _descriptor_table_size(pid) >= _room_expected(), pid
    finally:
        stop(process)


@needs_room
def test_reserving_the_descriptor_table_takes_and_closes_no_descriptor() -> None:
    """Even with the very descriptor it reaches for in use (it takes the lowest free one from
    there, and gives it back)."""
    code = f"""
import os
from openenv_anyio.server.os_limits import reserve_descriptor_table
top = {_room_expected()} - 1
held = os.open(os.devnull, os.O_RDONLY)
os.dup2(held, top)
before = sorted(os.listdir("/proc/self/fd")), os.fstat(top).st_ino
size = reserve_descriptor_table()
after = sorted(os.listdir("/proc/self/fd")), os.fstat(top).st_ino
status = open("/proc/self/status").read()
room = int(status.split("FDSize:")[1].split()[0])
print(size, room, before == after)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    size, room, unchanged = done.stdout.split()
    assert int(size) == _room_expected() and int(room) >= _room_expected() and unchanged == "True", done.stdout


@pytest.mark.skipif(_somaxconn() < LISTEN_BACKLOG_FLOOR, reason="this kernel's somaxconn is below the default backlog")
def test_no_warning_when_the_limits_suffice() -> None:
    process, _, lines = started("openenv_anyio.envs.echo:EchoEnv", "--port", "0")
    stop(process)
    assert not any("WARNING" in line for line in lines), lines


def test_a_bad_listen_backlog_is_a_one_line_error() -> None:
    done = subprocess.run(
        serve_command("openenv_anyio.envs.echo:EchoEnv", "--port", "0", "--listen-backlog", "0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "openenv-anyio serve: --listen-backlog must be at least 1 "
        "(leave the flag out for the session limit, at least 4096)"
    )


def test_the_line_names_every_limit_below_what_the_server_needs() -> None:
    enough = OsLimits(somaxconn=65535, tcp_max_syn_backlog=65535, tcp_syncookies=1, open_files=1 << 20)
    assert shortfall(listen_backlog(None, 16384), 16384, enough) is None
    low = OsLimits(somaxconn=4096, tcp_max_syn_backlog=2048, tcp_syncookies=0, open_files=1024)
    line = shortfall(listen_backlog(None, 16384), 16384, low)
    assert line is not None and "\n" not in line
    assert "sysctl -w net.core.somaxconn=16384" in line
    assert "sysctl -w net.ipv4.tcp_max_syn_backlog=16384" in line
    assert f"open-file limit 1024 is below the {16384 + OPEN_FILES_RESERVE}" in line and "ulimit -n" in line
    # with SYN cookies on, a full SYN queue answers with cookies: tcp_max_syn_backlog is no limit
    cookies = OsLimits(somaxconn=65535, tcp_max_syn_backlog=128, tcp_syncookies=1, open_files=None)
    assert shortfall(20000, None, cookies) is None
    assert listen_backlog(None, None) == listen_backlog(None, 10) == LISTEN_BACKLOG_FLOOR
    assert listen_backlog(7, 16384) == 7
