"""The blocking modes' event loop thread is owned: gone after close(), never holding up
interpreter exit (a client nobody closed still closes its session), and Ctrl-C interrupts a
blocking call. Scripts run in a child process against our server in this one."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from openenv_anyio.server import EnvServer, ServerConfig
from tests.serve_process import serve_environment

from .envs import SlowTinyEcho

EXIT_TIMEOUT_S = 60.0


@pytest.fixture
def slow() -> Iterator[tuple[str, type[SlowTinyEcho]]]:
    counting = type("SlowTinyEcho", (SlowTinyEcho,), {"instances": []})
    with EnvServer(counting, ServerConfig(ping_interval_s=None, ping_timeout_s=None)).run_in_thread() as running:
        yield running.url, counting


def child(script: str, url: str) -> subprocess.Popen[str]:
    source = textwrap.dedent(script).replace("URL", repr(url))
    return subprocess.Popen(
        [sys.executable, "-c", source],
        env=serve_environment(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_exit_without_close_does_not_hang_and_closes_the_session(
    backend: str, slow: tuple[str, type[SlowTinyEcho]]
) -> None:
    url, counting = slow
    process = child(
        f"""
        from openenv_anyio.compat import GenericEnvClient
        env = GenericEnvClient(base_url=URL, backend={backend!r})
        env.reset()
        print(env.step({{"message": "left open"}}).observation["echoed_message"], flush=True)
        """,
        url,
    )
    out, err = process.communicate(timeout=EXIT_TIMEOUT_S)
    assert process.returncode == 0, err
    assert out.strip() == "left open"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(env.closed for env in counting.instances):
        time.sleep(0.05)
    assert [(env.steps, env.closed) for env in counting.instances] == [(1, True)]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_interrupts_a_blocking_call(backend: str, slow: tuple[str, type[SlowTinyEcho]]) -> None:
    url, _ = slow
    process = child(
        f"""
        import threading
        from openenv_anyio.compat import GenericEnvClient
        env = GenericEnvClient(base_url=URL, backend={backend!r})
        env.reset()
        print("stepping", flush=True)
        try:
            env.step({{"message": "sleep 30"}})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            env.close()
            threads = [t.name for t in threading.enumerate() if t.name.startswith("openenv-anyio-compat")]
            print("threads", threads, flush=True)
        """,
        url,
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
def test_a_client_dropped_without_close_ends_its_thread_and_session(
    backend: str, slow: tuple[str, type[SlowTinyEcho]]
) -> None:
    import gc
    import threading

    from openenv_anyio.compat import GenericEnvClient

    url, counting = slow
    env = GenericEnvClient(base_url=url, backend=backend)
    env.reset()
    env.step({"message": "then dropped"})
    del env
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        any(t.name.startswith("openenv-anyio-compat") for t in threading.enumerate())
        or not all(e.closed for e in counting.instances)
    ):
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("openenv-anyio-compat")]
    assert [(e.steps, e.closed) for e in counting.instances] == [(1, True)]
