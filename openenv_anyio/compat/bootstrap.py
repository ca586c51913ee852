"""``Client.from_docker_image(...)``: upstream's handle that starts a server, then connects.

``await handle`` gives the connected client (async mode); ``handle.sync()`` the connected
``SyncEnvClient``. Nothing starts until one of the two; a handle resolves once. The provider
(upstream's ``LocalDockerProvider`` by default, which needs ``openenv`` installed, or any
object with ``start_container`` / ``wait_for_ready`` / ``stop_container``) is stopped when
the client closes, or at once when starting or connecting fails.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

from .client_calls import ClientCalls
from .sync_client import SyncEnvClient

__all__ = ["Bootstrap", "docker_provider"]

_Client = TypeVar("_Client", bound=ClientCalls[Any])


def docker_provider() -> Any:
    """Upstream's ``LocalDockerProvider`` (the default provider of ``from_docker_image``)."""
    try:
        from openenv.core.containers.runtime import LocalDockerProvider
    except ImportError:
        raise RuntimeError(
            "from_docker_image without provider= uses upstream's LocalDockerProvider: install openenv, "
            "or pass a provider with start_container(), wait_for_ready() and stop_container()"
        ) from None
    return LocalDockerProvider()


class Bootstrap(Generic[_Client]):
    """A pending client: ``await`` it or call :meth:`sync` (once)."""

    def __init__(self, build: Callable[[], _Client]) -> None:
        self._build = build
        self._used = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} pending (await it or call .sync())>"

    def _client(self) -> _Client:
        if self._used:
            raise RuntimeError(
                "this bootstrap handle was already resolved; call the factory again for a new environment"
            )
        self._used = True
        return self._build()

    async def _resolve(self) -> _Client:
        client = self._client()
        try:
            return await client._awaited(client._connect_async)
        except BaseException:
            await client._awaited(client._close_async)
            raise

    def __await__(self) -> Generator[Any, None, _Client]:
        return self._resolve().__await__()

    def sync(self) -> SyncEnvClient[Any, Any, Any]:
        client = self._client()
        wrapper: SyncEnvClient[Any, Any, Any] = client.sync()
        try:
            wrapper.connect()
        except BaseException:
            wrapper.close()
            raise
        return wrapper


def started(cls: Callable[..., _Client], image: str, provider: Any, options: dict[str, Any]) -> _Client:
    """A client of ``cls`` on a server ``provider`` started from ``image`` (stopped again on failure)."""
    url = provider.start_container(image, **options)
    try:
        provider.wait_for_ready(url)
        client = cls(base_url=url, provider=provider)
    except BaseException:
        provider.stop_container()
        raise
    client._provider_running = True
    return client
