"""``openenv-anyio serve TARGET --workers N``: one port, N processes, sessions and resume
intact (resumes reach the owner), one capacity limit, dead workers restarted, clean stop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from ops.scrape import scrape
from resume.cutting_proxy import CutPlan, CuttingProxy
from serve_process import ServeProcess, serve_environment, serve_process

from openenv_anyio.client import CapacityReached, EnvClient, SessionNotFound
from openenv_anyio.server.workers import worker_count
from openenv_anyio.server.workers.routing import BALANCE_SLACK, session_owner

pytestmark = pytest.mark.anyio

TARGET = "resume.envs:StepCounter"
TIMEOUT_S = 60


def slot_of(env: EnvClient) -> int:
    assert env.session_id is not None
    owner = session_owner(env.session_id)
    assert owner is not None, env.session_id
    return owner[0]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


LIMIT = 24


@pytest.fixture
def fleet() -> Iterator[ServeProcess]:
    """Two workers, at most LIMIT sessions."""
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0", "--max-concurrent-envs", str(LIMIT)) as served:
        yield served


@pytest.fixture(scope="module")
def unlimited_fleet() -> Iterator[ServeProcess]:
    """Two workers, no session limit (shared by the tests that use it, one at a time)."""
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        yield served


@contextlib.asynccontextmanager
async def open_concurrently(url: str, tries: int) -> AsyncIterator[tuple[int, list[CapacityReached]]]:
    """``tries`` sessions at once; those that open stay open until the block ends (each in
    the task that opened it)."""
    opened = 0
    refused: list[CapacityReached] = []
    settled, release = anyio.Event(), anyio.Event()

    async def one() -> None:
        nonlocal opened
        async with EnvClient(url, ping_interval_s=None) as client:
            try:
                await client.reset()
            except CapacityReached as exc:
                refused.append(exc)
            else:
                opened += 1
            if opened + len(refused) == tries:
                settled.set()
            await release.wait()

    async with anyio.create_task_group() as group:
        for _ in range(tries):
            group.start_soon(one)
        await settled.wait()
        try:
            yield opened, refused
        finally:
            release.set()


async def test_sessions_spread_and_capacity_is_per_server(fleet: ServeProcess) -> None:
    """New sessions go to the least-loaded worker, wherever the kernel lands them; the
    limit (WS-CAP-1) counts every worker's sessions, exactly, also when sessions arrive
    all at once."""
    with anyio.fail_after(TIMEOUT_S):
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for _ in range(LIMIT):  # one after another: each is counted before the next comes
                clients.append(await stack.enter_async_context(EnvClient(fleet.url, ping_interval_s=None)))
            loads = Counter(slot_of(client) for client in clients)
            assert set(loads) == {0, 1}
            assert abs(loads[0] - loads[1]) <= BALANCE_SLACK
            async with open_concurrently(fleet.url, 6) as (opened, refused):
                assert (opened, len(refused)) == (0, 6)
                assert {(exc.extra["active_sessions"], exc.extra["max_sessions"]) for exc in refused} == {
                    (LIMIT, LIMIT)
                }
            for client in clients[:4]:  # freed slots are free for every worker
                await client.close()
            async with open_concurrently(fleet.url, 10) as (opened, refused):
                assert (opened, len(refused)) == (4, 6)
    assert fleet.stop(signal.SIGINT) == 0  # Ctrl-C: every worker stops cleanly
    assert not any(_pid_alive(pid) for pid in fleet.pids)
    assert "Traceback" not in "".join(fleet.lines)


@pytest.fixture
def cut_link(unlimited_fleet: ServeProcess) -> Iterator[CuttingProxy]:
    """Two workers behind a connection-cutting proxy (started from the test's thread)."""
    proxy = CuttingProxy(("127.0.0.1", unlimited_fleet.port), CutPlan(seed=7, data_rate=0.08, handshake_rate=0.05))
    with proxy.running() as url:
        proxy.url = url
        yield proxy


async def test_resumes_reach_the_owner_through_a_cutting_link(
    cut_link: CuttingProxy, unlimited_fleet: ServeProcess
) -> None:
    """EXT-RES-1 with --workers: connections are cut over and over; each resume lands on
    whichever worker the kernel picks and is handed to the session's owner (the metrics
    count those hand-offs); every step count is exact."""
    sessions, steps = LIMIT, 12
    proxy, url = cut_link, cut_link.url
    handed_before = scrape(unlimited_fleet.url).value("openenv_connections_handed_over_total", to="owner")
    slots: Counter[int] = Counter()
    resumes = 0
    all_open = anyio.Event()

    async def agent(index: int) -> None:
        nonlocal resumes
        async with EnvClient(url, ping_interval_s=None) as env:
            slots[slot_of(env)] += 1
            await env.reset(episode_id=f"episode-{index}")
            if sum(slots.values()) == sessions:  # cuts start once every session exists
                proxy.plan.active = True
                all_open.set()
            await all_open.wait()
            for number in range(1, steps + 1):
                result = await env.step({"n": number})
                assert result.observation == {"steps": number, "echo": number}
            state = await env.state()
            assert (state.episode_id, state.step_count) == (f"episode-{index}", steps)
            resumes += env.resumes

    with anyio.fail_after(TIMEOUT_S * 2):
        async with anyio.create_task_group() as group:
            for index in range(sessions):
                group.start_soon(agent, index)
    assert sum(slots.values()) == sessions
    assert resumes >= sessions // 2, proxy.cuts
    assert sum(proxy.cuts.values()) >= resumes
    # with two workers about half of the resumes land on the worker that does not own the session
    handed = scrape(unlimited_fleet.url).value("openenv_connections_handed_over_total", to="owner") - handed_before
    assert 0 < handed <= resumes + sum(proxy.cuts.values()), (handed, resumes)


@pytest.mark.parametrize("anyio_backend", ["trio"])  # a server test; the client is a tool here
async def test_a_dead_worker_is_restarted_and_only_its_sessions_end() -> None:
    """A worker killed outright: its sessions end loudly (SESSION_NOT_FOUND on resume), the
    other worker's sessions go on, and the slot serves new sessions again."""
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        with anyio.fail_after(TIMEOUT_S):
            async with contextlib.AsyncExitStack() as stack:
                clients = []
                for _ in range(8):
                    clients.append(await stack.enter_async_context(EnvClient(served.url, ping_interval_s=None)))
                    await clients[-1].reset()
                by_slot = {slot: [c for c in clients if slot_of(c) == slot] for slot in (0, 1)}
                assert by_slot[0] and by_slot[1]
                mark = len(served.lines)
                os.kill(served.pids[1], signal.SIGKILL)
                for client in by_slot[1]:
                    with pytest.raises(SessionNotFound):
                        await client.step({"n": 1})
                for client in by_slot[0]:
                    assert (await client.step({"n": 1})).observation["steps"] == 1
                restarted = await anyio.to_thread.run_sync(
                    lambda: served.wait_for_line(r"worker 1 restarted \(pid (\d+)", start=mark)
                )
                newcomers = []
                for _ in range(BALANCE_SLACK + 1):
                    newcomers.append(await stack.enter_async_context(EnvClient(served.url, ping_interval_s=None)))
                assert 1 in {slot_of(client) for client in newcomers}
                assert (await newcomers[-1].reset()).observation == {"steps": 0}
        pids = [*served.pids, int(restarted.group(1))]
        assert served.stop(signal.SIGTERM) == 0  # every worker stops, the new one too
        assert not any(_pid_alive(pid) for pid in pids)
        assert "Traceback" not in "".join(served.lines)


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_worker_count_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=f"--workers takes a positive number or 'auto', not '{value}'"):
        worker_count(value)


def test_auto_is_one_worker_per_usable_core() -> None:
    assert worker_count("auto") == len(os.sched_getaffinity(0))
    assert worker_count("3") == 3


def test_a_bad_worker_count_is_a_one_line_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "serve", TARGET, "--workers", "none"],
        capture_output=True,
        text=True,
        timeout=60,
        env=serve_environment(),
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "openenv-anyio serve: --workers takes a positive number or 'auto', not 'none'"
    ]


async def test_workers_require_the_token_and_never_hold_it_on_a_command_line(tmp_path) -> None:
    """SEC-TOKEN-1 with ``--workers``: every worker checks the token; the tokens reach the
    workers through their environment, not their command lines (``ps`` shows those)."""
    import httpx

    from openenv_anyio.client import HandshakeRejected

    token = "fleet-token-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    with serve_process(
        TARGET, "--workers", "2", "--ping-interval", "0", "--token-file", str(tmp_path / "token")
    ) as served:
        command_lines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in served.pids]
        with anyio.fail_after(TIMEOUT_S):
            async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
                assert (await http.get("/schema")).status_code == 401
                for _ in range(4):  # connections land on either worker
                    with pytest.raises(HandshakeRejected) as refused:
                        async with EnvClient(served.url, ping_interval_s=None):
                            pass
                    assert refused.value.status == 401
                    async with EnvClient(served.url, ping_interval_s=None, token=token) as env:
                        await env.reset()
    assert len(command_lines) == 2 and all(
        b"serve_process" not in line and token.encode() not in line for line in command_lines
    )


LOW_OPEN_FILES = 256


def _lower_open_file_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (LOW_OPEN_FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def _open_file_limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(f"no open-file limit in /proc/{pid}/limits")


def _hard_open_file_limit() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


@pytest.mark.skipif(
    not LOW_OPEN_FILES < _hard_open_file_limit() < (1 << 62),
    reason=f"the hard open-file limit here is at most {LOW_OPEN_FILES} (nothing to raise) "
    "or unlimited (/proc shows no number)",
)
def test_serve_raises_the_open_file_limit_of_every_worker() -> None:
    """Each session holds a socket: a soft limit of 256 would refuse connections long before
    the session limit, so serve raises it to the hard limit, workers included, and says so."""
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0", preexec_fn=_lower_open_file_limit) as served:
        hard = _open_file_limits(served.process.pid)[1]
        served.wait_for_line(rf"open-file limit raised from {LOW_OPEN_FILES} to {hard}")
        for pid in [served.process.pid, *served.pids]:
            assert _open_file_limits(pid) == (hard, hard), pid
