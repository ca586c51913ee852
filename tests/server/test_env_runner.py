"""Runners without a server: thread affinity, result and error delivery, clean join."""

from __future__ import annotations

import threading

import pytest
import trio

from openenv_anyio.server.execution.runner import InlineRunner, ThreadRunner

pytestmark = pytest.mark.trio


async def ends(thread: threading.Thread) -> bool:
    """Whether ``thread`` ends within 5 s (``aclose`` does not join it; the test does)."""
    await trio.to_thread.run_sync(thread.join, 5)
    return not thread.is_alive()


async def test_thread_runner_uses_one_thread_and_joins_it() -> None:
    """SRV-EXEC-1."""
    with trio.fail_after(10):
        runner = ThreadRunner()
        idents = {await runner.run(threading.get_ident) for _ in range(50)}
        assert len(idents) == 1 and idents != {threading.get_ident()}
        with pytest.raises(ZeroDivisionError):
            await runner.run(lambda: 1 / 0)
        assert await runner.run(lambda: 42) == 42
        await runner.aclose()
        assert await ends(runner.thread)
        with pytest.raises(RuntimeError, match="closed"):
            await runner.run(lambda: 1)


async def test_coroutines_are_awaited_on_the_loop() -> None:
    async def on_loop() -> int:
        return threading.get_ident()

    with trio.fail_after(10):
        runner = ThreadRunner()
        assert await runner.run(on_loop) == threading.get_ident()
        await runner.aclose()
        assert await InlineRunner().run(on_loop) == threading.get_ident()


async def test_cancelled_wait_abandons_the_call_and_the_thread_still_ends() -> None:
    release = threading.Event()
    with trio.fail_after(10):
        runner = ThreadRunner()
        with trio.move_on_after(0.05):
            await runner.run(release.wait)
        await runner.aclose()  # does not wait for the abandoned call
        assert runner.thread.is_alive()
        release.set()
        assert await ends(runner.thread)


async def test_open_starts_the_thread_off_the_loop_and_serves_calls() -> None:
    """SRV-EXEC-1: ``ThreadRunner.open()`` gives the same dedicated thread as the constructor."""
    with trio.fail_after(10):
        runner = await ThreadRunner.open()
        assert runner.thread.is_alive()
        idents = {await runner.run(threading.get_ident) for _ in range(5)}
        assert idents == {runner.thread.ident}
        await runner.aclose()
        assert await ends(runner.thread)


async def test_completions_finishing_together_each_reach_their_own_task() -> None:
    """Completions share loop wake-ups (one drain for all pending): none is lost or crossed."""
    sessions, calls = 24, 200
    with trio.fail_after(30):
        runners = [await ThreadRunner.open() for _ in range(sessions)]
        seen: dict[int, list[tuple[int, int]]] = {}

        async def drive(i: int, runner: ThreadRunner) -> None:
            seen[i] = [await runner.run(lambda k=k: (i, k)) for k in range(calls)]

        async with trio.open_nursery() as nursery:
            for i, runner in enumerate(runners):
                nursery.start_soon(drive, i, runner)
        for runner in runners:
            await runner.aclose()
        assert seen == {i: [(i, k) for k in range(calls)] for i in range(sessions)}
        assert all([await ends(runner.thread) for runner in runners])


async def test_a_cancelled_waiter_does_not_take_a_completion_meant_for_another() -> None:
    release = threading.Event()
    with trio.fail_after(10):
        slow, fast = ThreadRunner(), ThreadRunner()
        with trio.move_on_after(0.05):
            await slow.run(release.wait)
        release.set()  # the abandoned completion lands in the shared inbox
        assert [await fast.run(lambda k=k: k) for k in range(20)] == list(range(20))
        await slow.aclose()
        await fast.aclose()
        assert await ends(slow.thread) and await ends(fast.thread)


async def test_aclose_runs_a_final_call_on_the_thread_and_raises_its_error() -> None:
    """SRV-EXEC-1: the final call (an environment's close) runs on the session's thread."""
    with trio.fail_after(10):
        runner = ThreadRunner()
        seen: list[int] = []
        await runner.aclose(final=lambda: seen.append(threading.get_ident()))
        assert seen == [runner.thread.ident] and await ends(runner.thread)

        failing = ThreadRunner()
        with pytest.raises(ZeroDivisionError):
            await failing.aclose(final=lambda: 1 / 0)
        assert await ends(failing.thread)
        await failing.aclose()  # closed already: nothing more happens


async def test_thread_starter_starts_session_threads_and_stops_its_own() -> None:
    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(10):
        async with thread_starter():
            runners = [await ThreadRunner.open() for _ in range(8)]
            starters = {thread.name for thread in threading.enumerate() if thread.name == "openenv-thread-starter"}
            assert starters == {"openenv-thread-starter"}
            assert len({await runner.run(threading.get_ident) for runner in runners}) == 8
            for runner in runners:
                await runner.aclose()
        assert all([await ends(runner.thread) for runner in runners])
    for _ in range(100):  # the starter's own thread ends after the block
        if not any(thread.name == "openenv-thread-starter" for thread in threading.enumerate()):
            break
        await trio.sleep(0.02)
    assert not any(thread.name == "openenv-thread-starter" for thread in threading.enumerate())


async def test_cancelled_while_the_factory_runs_the_session_thread_still_ends() -> None:
    """A session cancelled during creation (client gone, server shutting down) leaves no
    thread behind: once the factory returns it waits for the next session, and ends with
    the block."""
    from openenv_anyio.server.execution.bound_env import InProcessEnv
    from openenv_anyio.server.execution.runner import thread_starter

    release = threading.Event()
    threads: list[threading.Thread] = []

    class Slow:
        def __init__(self) -> None:
            threads.append(threading.current_thread())
            release.wait(5)

        def reset(self) -> dict[str, int]:
            return {}

        def step(self, action: object) -> dict[str, int]:
            return {}

    with trio.fail_after(10):
        async with thread_starter():
            with trio.move_on_after(0.1) as waited:
                await InProcessEnv.create(Slow)
            assert waited.cancelled_caught and len(threads) == 1
            release.set()
            assert await waits_for_a_session(threads[0])
        assert await ends(threads[0])


async def waits_for_a_session(thread: threading.Thread) -> bool:
    """Whether ``thread`` is among the block's threads waiting for a session within 5 s."""
    from openenv_anyio.server.execution.runner import _threads

    threads = _threads.get()
    assert threads is not None
    with trio.move_on_after(5):
        while thread not in threads.idle._waiting.values():
            await trio.sleep(0.01)
        return True
    return False


async def test_sessions_one_after_another_reuse_one_thread() -> None:
    """SRV-EXEC-1 holds across reuse: a thread serves one session at a time, every call of
    that session; a session opening while another runs gets a thread of its own."""
    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(10):
        async with thread_starter():
            first = await ThreadRunner.open()
            first_ident = await first.run(threading.get_ident)
            beside = await ThreadRunner.open()
            assert await beside.run(threading.get_ident) != first_ident
            await first.aclose(final=lambda: None)
            assert not first.alive
            assert await waits_for_a_session(first.thread)
            idents = set()
            for _ in range(20):
                runner = await ThreadRunner.open()
                idents |= {await runner.run(threading.get_ident) for _ in range(3)}
                await runner.aclose()
            assert idents == {first_ident}
            assert [await beside.run(threading.get_ident) for _ in range(3)] == [beside.thread.ident] * 3
            await beside.aclose()
        assert await ends(first.thread) and await ends(beside.thread)


async def test_a_thread_waits_for_a_session_at_most_idle_s_then_ends() -> None:
    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(10):
        async with thread_starter(idle_s=1.0):
            runner = await ThreadRunner.open()
            await runner.run(lambda: None)
            await runner.aclose()
            assert await waits_for_a_session(runner.thread)  # it waits first ...
            assert await ends(runner.thread)  # ... then ends, nobody having taken it
            again = await ThreadRunner.open()  # none waits: a new thread
            assert await again.run(threading.current_thread) is not runner.thread
            await again.aclose()


async def test_with_idle_s_zero_a_sessions_thread_ends_with_it() -> None:
    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(10):
        async with thread_starter(idle_s=0):
            first = await ThreadRunner.open()
            await first.aclose(final=lambda: None)
            assert await ends(first.thread)
            second = await ThreadRunner.open()
            assert await second.run(threading.current_thread) is not first.thread
            await second.aclose()
            assert await ends(second.thread)


async def test_a_thread_is_not_handed_on_before_its_sessions_last_call_returns() -> None:
    """A close() still running after its session stopped waiting (SRV-FAULT-3) keeps the
    thread: the runner reads as alive, and a new session gets another thread."""
    from openenv_anyio.server.execution.runner import thread_starter

    release = threading.Event()
    with trio.fail_after(10):
        async with thread_starter():
            hung = await ThreadRunner.open()
            hung_ident = await hung.run(threading.get_ident)
            with trio.move_on_after(0.05):
                await hung.aclose(final=release.wait)
            assert hung.alive
            other = await ThreadRunner.open()
            assert await other.run(threading.get_ident) != hung_ident
            await other.aclose()
            release.set()
            assert await waits_for_a_session(hung.thread)
            assert not hung.alive


async def test_a_thread_taken_as_it_gives_up_waiting_still_serves_the_session() -> None:
    """The loop took the waiting thread, and the session's first call comes only after the
    thread's wait ran out: the thread stays for it (it lost the claim) and serves it."""
    from openenv_anyio.server.execution.runner import _threads, thread_starter

    with trio.fail_after(10):
        async with thread_starter(idle_s=0.05):
            first = await ThreadRunner.open()
            await first.aclose(final=lambda: None)
            assert await waits_for_a_session(first.thread)
            threads = _threads.get()
            assert threads is not None
            taken = threads.idle.take()
            assert taken is not None and taken[1] is first.thread
            await trio.sleep(0.3)  # six times its wait
            assert first.thread.is_alive()
            runner = ThreadRunner(waiting=taken)
            assert await runner.run(threading.current_thread) is first.thread
            await runner.aclose()
            assert await waits_for_a_session(first.thread)
        assert await ends(first.thread)


async def test_threads_leaving_as_sessions_take_them_lose_no_call() -> None:
    """A waiting thread that gives up at the moment a session takes it: the thread or the
    session has it, never neither (a call would wait for ever) and never both."""
    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(30):
        async with thread_starter(idle_s=0.0005):
            for _ in range(300):
                runner = await ThreadRunner.open()
                assert await runner.run(lambda: 7) == 7
                await runner.aclose()
                await trio.sleep(0.0005 * (_ % 3))


async def test_starter_blocks_ending_out_of_order_leave_runners_working() -> None:
    """Two servers in one trio run whose lifetimes overlap without nesting: runners opened
    after both ended still start (a closed starter is never used)."""
    from contextlib import AsyncExitStack

    from openenv_anyio.server.execution.runner import thread_starter

    with trio.fail_after(10):
        first, second = AsyncExitStack(), AsyncExitStack()
        await first.enter_async_context(thread_starter())
        await second.enter_async_context(thread_starter())
        await first.aclose()  # the first server stops before the second
        during = await ThreadRunner.open()
        await second.aclose()
        after = await ThreadRunner.open()
        for runner in (during, after):
            assert await runner.run(threading.get_ident) == runner.thread.ident
            await runner.aclose()
            assert await ends(runner.thread)


_NO_THREADS_LEFT = """
import resource, threading
import trio
from openenv_anyio.server.execution.bound_env import InProcessEnv
from openenv_anyio.server.execution.runner import ThreadNotStarted, ThreadRunner, thread_starter

def vm_size() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmSize:"))
    return int(line.split()[1]) * 1024

class Env:
    def reset(self) -> dict[str, int]:
        return {}

    def step(self, action: object) -> dict[str, int]:
        return {}

async def main() -> None:
    async with thread_starter():
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        threading.stack_size(1 << 30)  # a new thread's stack cannot be mapped under the limit below
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (256 << 20), hard))
        runner = await ThreadRunner.open()
        queued = trio.Event()
        async def call_queued_before_the_failure() -> None:
            queued.set()
            try:
                await runner.run(lambda: 1)
            except ThreadNotStarted as exc:
                print("queued call:", exc)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call_queued_before_the_failure)
            await queued.wait()
        try:
            await runner.run(lambda: 2)
        except ThreadNotStarted:
            print("later call: not started")
        print("alive:", runner.alive)
        await runner.aclose(final=lambda: 3)
        try:
            await InProcessEnv.create(Env)
        except ThreadNotStarted:
            print("create: not started")
        threading.stack_size(0)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        env = await InProcessEnv.create(Env)
        print("after:", (await env.reset({}))[0].observation)
        await env.aclose()

trio.run(main)
"""


async def test_a_thread_that_cannot_be_started_fails_the_calls_queued_for_it() -> None:
    """Out of address space for a new thread's stack (a real limit, in a process of its own):
    the calls queued for the session's thread, and any made later, raise ThreadNotStarted
    instead of waiting for ever; closing the runner returns; the process goes on."""
    import sys

    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-c", _NO_THREADS_LEFT], capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert lines[0].startswith("queued call: the session's thread could not be started: can't start new thread")
    assert lines[1:] == ["later call: not started", "alive: False", "create: not started", "after: {}"]
