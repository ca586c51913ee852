"""What the compat wrappers (a pending result, the blocking face, a bootstrap handle) ask of
the client they wrap: a structural type, so that they and :mod:`.env_client` do not import
each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from .modes import ExecutionMode

__all__ = ["ClientCalls"]

ActT = TypeVar("ActT", contravariant=True)
_T = TypeVar("_T")


class ClientCalls(Protocol[ActT]):
    """A compat client's calls, each a coroutine run on the loop the calling mode picks."""

    _execution: ExecutionMode
    #: a server it started (``from_docker_image``) is running and is stopped when it closes
    _provider_running: bool

    @property
    def base_url(self) -> str | None: ...

    async def _awaited(self, call: Callable[[], Awaitable[_T]]) -> _T: ...

    def _blocking(self, call: Callable[[], Awaitable[_T]], *, handover: bool = False) -> _T: ...

    async def _connect_async(self) -> Any: ...

    async def _connect_public(self) -> Any: ...

    async def _disconnect_async(self) -> None: ...

    async def _close_async(self) -> None: ...

    async def _reset_async(self, **kwargs: Any) -> Any: ...

    async def _step_async(self, action: ActT, **kwargs: Any) -> Any: ...

    async def _state_async(self) -> Any: ...

    async def _new_session_async(self) -> Any: ...

    def _step_payload(self, action: ActT) -> dict[str, Any]: ...

    def _parse_result(self, payload: dict[str, Any]) -> Any: ...

    def _parse_state(self, payload: dict[str, Any]) -> Any: ...

    def sync(self) -> Any: ...
