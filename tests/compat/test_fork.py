"""A process forked while a blocking client is open (``os.fork``, ``multiprocessing`` with
the ``fork`` start method; the compat client, ``EnvClient.sync()`` and the TRL factory's
instances; asyncio and trio): the client's connection and event loop stay in the parent.
In the child a call fails at once with :class:`UsedAfterFork`, and exit never waits for the
parent's loop, whether the child used the client or not. The parent's client goes on
unharmed. Scripts run in a child process against our server in this one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from openenv_anyio.server import EnvServer, ServerConfig
from tests.serve_process import serve_environment

from .envs import TinyEcho

#: a child that hangs (its first call, or its exit) is stopped after this
SCRIPT_TIMEOUT_S = 30.0

CLIENTS = {
    "compat": """
        from openenv_anyio.compat import GenericEnvClient
        env = GenericEnvClient(base_url=URL, backend=BACKEND, message_timeout_s=600)
        env.reset()
        def use():
            return env.step({"message": "hi"}).observation["echoed_message"]
        done = env.close
    """,
    "sync": """
        from openenv_anyio.client import EnvClient
        env = EnvClient(URL, message_timeout_s=600).sync(backend=BACKEND)
        env.reset()
        def use():
            return env.step({"message": "hi"}).observation["echoed_message"]
        done = env.close
    """,
    "trl": """
        from openenv_anyio.integrations.trl import close, environment_factory
        env = environment_factory(URL, backend=BACKEND, message_timeout_s=600)()
        env.reset()
        def use():  # a reset: TinyEcho's step tool takes the action whole
            env.reset()
            return env.observation["echoed_message"]
        def done():
            close(env)
    """,
}

FORKS = {
    "os.fork, used": """
        pid = os.fork()
        if pid == 0:
            child()
            sys.exit(0)  # a normal exit: atexit hooks and finalizers run
        print("exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
    """,
    "os.fork, unused": """
        pid = os.fork()
        if pid == 0:
            print("child: not used", flush=True)
            sys.exit(0)
        print("exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
    """,
    "multiprocessing, used": """
        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join()
        print("exit", process.exitcode, flush=True)
    """,
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = ServerConfig(ping_interval_s=None, ping_timeout_s=None)
    with EnvServer(TinyEcho, config).run_in_thread() as running:
        yield running.url


def script(client: str, fork: str, url: str, backend: str) -> str:
    return "\n".join(
        [
            "import multiprocessing, os, sys",
            f"URL, BACKEND = {url!r}, {backend!r}",
            textwrap.dedent(client),
            textwrap.dedent(
                """
                def child():
                    try:
                        print("child: answered", use(), flush=True)
                    except Exception as exc:
                        print("child:", type(exc).__name__, str(exc).split(":")[0], flush=True)
                """
            ),
            textwrap.dedent(fork),
            'print("parent:", use(), flush=True)',
            "done()",
        ]
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("fork", list(FORKS))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_forked_child_fails_fast_and_exits(url: str, client: str, fork: str, backend: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", script(CLIENTS[client], FORKS[fork], url, backend)],
        env=serve_environment(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its forked child too is stopped if it hangs
    )
    try:
        out, err = process.communicate(timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"hung: {out!r} {err[-2000:]}")
    assert process.returncode == 0, err
    lines = out.strip().splitlines()
    parent = "parent: Tiny Echo ready" if client == "trl" else "parent: hi"
    if fork.endswith("unused"):
        assert lines == ["child: not used", "exit 0", parent], (out, err)
    else:
        assert lines[0].startswith("child: UsedAfterFork"), (out, err)
        assert lines[1:] == ["exit 0", parent], (out, err)
