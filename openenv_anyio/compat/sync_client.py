"""``SyncEnvClient``: upstream's blocking face of a client (``client.sync()``), on our client.

    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(); env.step({"message": "hi"})
        other = env.new_session()                 # another session on the same server

Every call blocks on the event loop thread the process's blocking clients share; ``close()``
closes the session (and the sessions ``new_session`` opened) and lets go of that thread, which
ends when no blocking client holds it.
Methods the wrapped client defines as ``async def`` are offered blocking too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, TypeVar

from .client_calls import ClientCalls
from .modes import ExecutionMode, claim

__all__ = ["SyncEnvClient"]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class SyncEnvClient(Generic[ActT, ObsT, StateT]):
    """Blocking ``connect`` / ``reset`` / ``step`` / ``state`` / ``close`` / ``new_session`` on a compat client."""

    def __init__(self, async_client: ClientCalls[ActT]) -> None:
        self._async = async_client

    def __repr__(self) -> str:
        return f"SyncEnvClient({self._async!r})"

    @property
    def async_client(self) -> ClientCalls[ActT]:
        """The wrapped client."""
        return self._async

    @property
    def base_url(self) -> str | None:
        return self._async.base_url

    def _run(self, call: Callable[[], Any]) -> Any:
        client = self._async
        client._execution = claim(client._execution, ExecutionMode.SYNC)
        return client._blocking(call)

    def connect(self) -> SyncEnvClient[ActT, ObsT, StateT]:
        self._run(self._async._connect_async)
        return self

    def disconnect(self) -> None:
        self._run(self._async._disconnect_async)

    def reset(self, **kwargs: Any) -> Any:
        return self._run(functools.partial(self._async._reset_async, **kwargs))

    def step(self, action: ActT, **kwargs: Any) -> Any:
        return self._run(functools.partial(self._async._step_async, action, **kwargs))

    def state(self) -> Any:
        return self._run(self._async._state_async)

    def close(self) -> None:
        self._run(self._async._close_async)

    def new_session(self) -> SyncEnvClient[Any, Any, Any]:
        child: ClientCalls[Any] = self._run(self._async._new_session_async)
        sync: SyncEnvClient[Any, Any, Any] = child.sync()
        return sync

    def __enter__(self) -> SyncEnvClient[ActT, ObsT, StateT]:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        """The wrapped client's other attributes; its coroutine methods and dispatched calls, blocking."""
        attribute = getattr(self._async, name)
        if inspect.iscoroutinefunction(attribute):

            def blocking(*args: Any, **kwargs: Any) -> Any:
                return self._run(functools.partial(attribute, *args, **kwargs))

            return blocking
        private = getattr(self._async, f"_{name}_async", None)
        if callable(private) and inspect.iscoroutinefunction(private):  # list_tools, call_tool, ...

            def dispatched(*args: Any, **kwargs: Any) -> Any:
                return self._run(lambda: getattr(self._async, name)(*args, **kwargs))

            return dispatched
        return attribute

    # upstream's wrapper answers the typed hooks too
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        return self._async._step_payload(action)

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        return self._async._parse_result(payload)

    def _parse_state(self, payload: dict[str, Any]) -> Any:
        return self._async._parse_state(payload)
