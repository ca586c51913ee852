"""Run a trio server for a test in its own thread and event loop, so synchronous test code
(and other processes) can talk to it; stop it cleanly on exit."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator

import trio

#: start(nursery, stop) starts the server in ``nursery``, returns its base URL; the server
#: must end once ``stop`` is set
ServerStarter = Callable[[trio.Nursery, trio.Event], Awaitable[str]]


@contextlib.contextmanager
def trio_server_in_thread(start: ServerStarter, name: str) -> Iterator[str]:
    """Yield the URL of the server ``start`` starts; set its stop event and join on exit."""
    ready = threading.Event()
    url: list[str] = []
    token: list[trio.lowlevel.TrioToken] = []
    stop = trio.Event()

    async def main() -> None:
        token.append(trio.lowlevel.current_trio_token())
        async with trio.open_nursery() as nursery:
            url.append(await start(nursery, stop))
            ready.set()

    thread = threading.Thread(target=trio.run, args=(main,), name=name, daemon=True)
    thread.start()
    if not ready.wait(20):
        raise RuntimeError(f"{name} did not start")
    try:
        yield url[0]
    finally:
        trio.from_thread.run_sync(stop.set, trio_token=token[0])
        thread.join(timeout=10)
