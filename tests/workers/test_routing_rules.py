"""The sans-IO parts of --workers: request heads, session ids naming their owner, and the
shared table's counting (one process here; the table is a file each process opens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_anyio.core import new_resume_token
from openenv_anyio.server.workers.routing import HEAD_LIMIT, read_head, session_owner, session_prefix
from openenv_anyio.server.workers.table import WorkerTable


def test_a_head_is_read_once_complete() -> None:
    token = str(new_resume_token(session_prefix(1, 3) + "ab" * 16))
    head = (
        b"GET /ws?x=1 HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n"
        b"openenv-resume-token: " + token.encode() + b"\r\n\r\n"
    )
    assert read_head(head[:-2]) is None  # still arriving
    parsed = read_head(head + b"\x81\x05hello")
    assert parsed is not None
    assert (parsed.path, parsed.websocket, parsed.resume_token) == (b"/ws", True, token)
    plain = read_head(b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
    assert plain is not None and not plain.websocket and plain.resume_token is None


@pytest.mark.parametrize("data", [b"\x16\x03\x01 tls hello\r\n\r\n", b"GET /\r\n\r\n", b"x" * HEAD_LIMIT])
def test_what_is_not_an_http_request_head_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        read_head(data)


def test_session_ids_name_their_slot_and_generation() -> None:
    session_id = session_prefix(2, 5) + "0f" * 16
    assert session_owner(session_id) == (2, 5)
    assert session_owner("0f" * 16) is None  # a single-process server's ids
    assert session_owner(session_prefix(2, 5) + "zz") is None


def test_the_table_limits_all_slots_together(tmp_path: Path) -> None:
    table = WorkerTable.create(tmp_path / "table", 2, 3)
    other = WorkerTable(tmp_path / "table")  # another process's handle
    try:
        assert [table.take(0), table.take(1), other.take(1)] == [True, True, True]
        assert not table.take(0) and not other.take(1)
        assert other.loads() == [1, 2] and table.total() == 3
        other.give_back(1)
        assert table.take(0) and table.loads() == [2, 1]
        table.mark_serving(0)
        other.mark_serving(1)
        assert table.serving_loads() == {0: 2, 1: 1}
        assert table.restart(1) == 1  # a dead worker's sessions are gone, its generation moves on
        assert other.loads() == [2, 0] and other.generation(1) == 1 and other.generation(0) == 0
        assert other.serving_loads() == {0: 2}  # not serving until its new process says so
    finally:
        table.close()
        other.close()


def test_a_slot_s_two_processes_count_apart(tmp_path: Path) -> None:
    """During a rolling restart a slot has two processes, each counting in its own tally:
    the old one's can be dropped when it exits (killed with its sessions) and the limit still
    holds for both together."""
    table = WorkerTable.create(tmp_path / "table", 1, 3)
    replacement = WorkerTable(tmp_path / "table")
    try:
        assert table.take(0, 0) and table.take(0, 0) and replacement.take(0, 1)
        assert not replacement.take(0, 1) and table.loads() == [3]
        table.clear(0, 0)  # the old process was killed: its two sessions are gone
        assert table.loads() == [1] and replacement.take(0, 1) and replacement.take(0, 1)
        replacement.give_back(0, 1)
        assert table.total() == 2
        with pytest.raises(IndexError):
            table.take(0, 2)
    finally:
        table.close()
        replacement.close()


def test_no_limit_and_a_foreign_file(tmp_path: Path) -> None:
    table = WorkerTable.create(tmp_path / "table", 1, None)
    try:
        assert all(table.take(0) for _ in range(100)) and table.total() == 100
    finally:
        table.close()
    (tmp_path / "other").write_bytes(b"\0" * 64)
    with pytest.raises(ValueError, match="not a worker table"):
        WorkerTable(tmp_path / "other")


def test_a_hosted_session_socket_is_placed_at_its_owner(tmp_path: Path) -> None:
    """``/ws?session_id=`` (MCP-SES-3) goes to the worker whose slot and generation the id
    names, never to the least-loaded one; an id of a restarted worker or of no worker stays."""
    import secrets
    import socket

    from openenv_anyio.server.workers.routing import OwnerRouter, Placement

    table = WorkerTable.create(tmp_path / "table", 2, None)
    inbox, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        router = OwnerRouter(0, table, inbox, [inbox, peer])
        hosted = session_prefix(1, 0) + secrets.token_urlsafe(32)
        assert session_owner(hosted) == (1, 0)
        head = read_head(
            b"GET /ws?session_id=" + hosted.encode() + b" HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n"
        )
        assert head is not None and head.session_id == hosted
        assert router.place(head) == (Placement.OWNER, 1)
        assert router.place(head, burst=True) == (Placement.OWNER, 1)
        mine = read_head(
            b"GET /ws?session_id="
            + session_prefix(0, 0).encode()
            + b"x" * 43
            + b" HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"
        )
        assert mine is not None and router.place(mine) == (Placement.HERE, 0)
        table.restart(1)
        assert router.place(head) == (Placement.HERE, 0)  # its worker is gone: answered here, 4404
        assert router.owner_of("not-an-id") is None
    finally:
        inbox.close()
        peer.close()
        table.close()
