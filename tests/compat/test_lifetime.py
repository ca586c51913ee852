"""The blocking clients' event loop thread (the compat clients' blocking mode and
``EnvClient.sync()``, which share one per backend): gone once every client is closed or
dropped, never holding up interpreter exit (a client nobody closed still closes its session),
and Ctrl-C interrupts a blocking call. Scripts run in a child process against our server in
this one."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_anyio.client.loop_thread import THREAD_NAME
from openenv_anyio.server import EnvServer, ServerConfig
from tests.serve_process import serve_environment

from .envs import SlowTinyEcho

EXIT_TIMEOUT_S = 60.0

#: a blocking client of each kind, opened as ``env`` on BACKEND; ``echoed(result)`` reads a step
OPEN = {
    "compat": """
        from openenv_anyio.compat import GenericEnvClient
        env = GenericEnvClient(base_url=URL, backend=BACKEND)
        def echoed(result):
            return result.observation["echoed_message"]
    """,
    "sync": """
        from openenv_anyio.client import EnvClient
        env = EnvClient(URL).sync(backend=BACKEND)
        def echoed(result):
            return result.observation["echoed_message"]
    """,
}


def loop_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_NAME)]


@pytest.fixture
def slow() -> Iterator[tuple[str, type[SlowTinyEcho]]]:
    counting = type("SlowTinyEcho", (SlowTinyEcho,), {"instances": []})
    # a step interrupted on the client side sleeps on in the server: its shutdown need not wait for it
    config = ServerConfig(ping_interval_s=None, ping_timeout_s=None, drain_timeout_s=0.5)
    with EnvServer(counting, config).run_in_thread() as running:
        yield running.url, counting


def child(script: str, url: str, kind: str = "compat", backend: str = "asyncio") -> subprocess.Popen[str]:
    opening = textwrap.dedent(OPEN[kind]).replace("BACKEND", repr(backend))
    source = (opening + textwrap.dedent(script)).replace("URL", repr(url))
    return subprocess.Popen(
        [sys.executable, "-c", source],
        env=serve_environment(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", list(OPEN))
def test_exit_without_close_does_not_hang_and_closes_the_session(
    kind: str, backend: str, slow: tuple[str, type[SlowTinyEcho]]
) -> None:
    url, counting = slow
    process = child(
        """
        env.reset()
        print(echoed(env.step({"message": "left open"})), flush=True)
        """,
        url,
        kind,
        backend,
    )
    out, err = process.communicate(timeout=EXIT_TIMEOUT_S)
    assert process.returncode == 0, err
    assert out.strip() == "left open"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(env.closed for env in counting.instances):
        time.sleep(0.05)
    assert [(env.steps, env.closed) for env in counting.instances] == [(1, True)]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", list(OPEN))
def test_ctrl_c_interrupts_a_blocking_call(kind: str, backend: str, slow: tuple[str, type[SlowTinyEcho]]) -> None:
    url, _ = slow
    process = child(
        f"""
        import threading
        env.reset()
        print("stepping", flush=True)
        try:
            env.step({{"message": "sleep 30"}})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            env.close()
            threads = [t.name for t in threading.enumerate() if t.name.startswith({THREAD_NAME!r})]
            print("threads", threads, flush=True)
        """,
        url,
        kind,
        backend,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "stepping"
    time.sleep(0.5)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=EXIT_TIMEOUT_S)
    assert process.returncode == 0, err
    assert out.split("\n")[:2] == ["interrupted", "threads []"]
    assert time.monotonic() - started < 20  # the 30 s step was not waited for


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", list(OPEN))
def test_a_client_dropped_without_close_ends_its_thread_and_session(
    kind: str, backend: str, slow: tuple[str, type[SlowTinyEcho]]
) -> None:
    import gc

    url, counting = slow
    env = open_blocking(kind, url, backend)
    env.reset()
    env.step({"message": "then dropped"})
    del env
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (loop_threads() or not all(e.closed for e in counting.instances)):
        time.sleep(0.05)
    assert loop_threads() == []
    assert [(e.steps, e.closed) for e in counting.instances] == [(1, True)]


def open_blocking(kind: str, url: str, backend: str) -> Any:
    from openenv_anyio.client import EnvClient
    from openenv_anyio.compat import GenericEnvClient

    if kind == "compat":
        return GenericEnvClient(base_url=url, backend=backend)
    return EnvClient(url).sync(backend=backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_blocking_clients_share_one_loop_thread_until_the_last_closes(
    backend: str, slow: tuple[str, type[SlowTinyEcho]]
) -> None:
    """Clients of both kinds stepped from threads run on one loop thread per backend; it
    stays while any of them is open and ends when the last one closes."""
    import threading

    url, counting = slow
    clients = [open_blocking(kind, url, backend) for kind in ("compat", "sync", "compat", "sync")]
    echoed: list[str] = []

    def drive(index: int) -> None:
        env = clients[index]
        env.reset()
        echoed.append(str(env.step({"message": f"from {index}"}).observation["echoed_message"]))

    threads = [threading.Thread(target=drive, args=(index,)) for index in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(echoed) == [f"from {index}" for index in range(len(clients))]
    assert loop_threads() == [f"{THREAD_NAME} ({backend})"]
    for env in clients[:-1]:
        env.close()
    assert loop_threads() == [f"{THREAD_NAME} ({backend})"]
    assert clients[-1].step({"message": "still"}).observation["echoed_message"] == "still"
    clients[-1].close()
    assert loop_threads() == []
    deadline = time.monotonic() + 10  # the server closes an environment after its session ends
    while time.monotonic() < deadline and not all(e.closed for e in counting.instances):
        time.sleep(0.05)
    assert sorted((e.steps, e.closed) for e in counting.instances) == [(1, True)] * 3 + [(2, True)]
