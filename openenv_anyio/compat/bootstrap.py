"""``Client.from_docker_image(...)``: upstream's handle that starts a server, then connects.

``await handle`` gives the connected client (async mode; the handle is a coroutine, so
``asyncio.run(handle)`` does too), connected through the client's public ``connect()`` as
upstream's is; ``handle.sync()`` the connected ``SyncEnvClient``. Nothing starts until one
of the two; a handle resolves once. The provider (upstream's ``LocalDockerProvider`` by
default, which needs ``openenv`` installed, or any object with ``start_container`` /
``wait_for_ready`` / ``stop_container``) is stopped when the client closes, or at once when
starting or connecting fails.

``Client.from_env("owner/space")`` is the same handle for a Hugging Face Space run locally,
with upstream 0.10's semantics: its registry image (``registry.hf.space/owner-space:TAG``)
started by the container provider (``use_docker=True``), or its checkout run by a runtime
provider (``use_docker=False``: upstream's ``UVProvider`` on ``project_path=``, by default
the Space's git URL). Offline, a given provider, a local image or a local checkout work; a
pull or a clone that needs the network fails as the provider reports it. A server already
running needs no factory: ``Client(base_url=URL)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

from .client_calls import ClientCalls
from .sync_client import SyncEnvClient

__all__ = ["Bootstrap", "docker_provider", "space_image", "space_started", "uv_provider"]

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


def uv_provider(repo_id: str, options: dict[str, Any]) -> Any:
    """Upstream's ``UVProvider`` for ``from_env(..., use_docker=False)``: runs the Space's
    checkout (``project_path=``, by default cloned from the Hugging Face Hub) with ``uv run``."""
    try:
        from openenv.core.containers.runtime import UVProvider
    except ImportError:
        where = options.get("project_path") or f"git+https://huggingface.co/spaces/{repo_id}"
        raise RuntimeError(
            f"from_env({repo_id!r}, use_docker=False) runs {where} with upstream's UVProvider: install openenv, "
            "or pass provider= (any object with start(), wait_for_ready() and stop()), or connect with base_url="
        ) from None
    return UVProvider(
        project_path=options.pop("project_path", f"git+https://huggingface.co/spaces/{repo_id}"), **options
    )


def space_image(repo_id: str, tag: str = "latest") -> str:
    """The image the Hugging Face registry serves a Space as (``owner/name`` lowercased, every
    other character than ``a-z0-9`` a ``-``)."""
    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise ValueError(f"repo_id must be a Hugging Face Space id 'owner/name', not {repo_id!r}")
    return f"registry.hf.space/{re.sub(r'[^a-z0-9]', '-', repo_id.lower())}:{tag}"


class Bootstrap(Coroutine[Any, Any, _Client]):
    """A pending client: ``await`` it (or hand it to ``asyncio.run``: it is a coroutine, as
    upstream's handle is) or call :meth:`sync` (once)."""

    def __init__(self, build: Callable[[], _Client]) -> None:
        self._build = build
        self._used = False
        self._coroutine: Coroutine[Any, Any, _Client] | None = None  # made when first driven

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
            await client._connect_public()
        except BaseException:
            await client._awaited(client._close_async)
            raise
        return client

    def _driven(self) -> Coroutine[Any, Any, _Client]:
        if self._coroutine is None:
            self._coroutine = self._resolve()
        return self._coroutine

    def __await__(self) -> Generator[Any, None, _Client]:
        return self._driven().__await__()

    def send(self, value: Any) -> Any:
        return self._driven().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        return self._driven().throw(typ, val, tb)

    def close(self) -> None:
        if self._coroutine is not None:
            self._coroutine.close()

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
    return _launched(
        cls,
        provider,
        lambda: provider.start_container(image, **options),
        provider.wait_for_ready,
        provider.stop_container,
    )


def _launched(
    cls: Callable[..., _Client],
    provider: Any,
    start: Callable[[], str],
    ready: Callable[[str], object],
    stop: Callable[[], object],
) -> _Client:
    """A client of ``cls`` on the server ``start`` starts, once ``ready``; ``stop`` on failure."""
    url = start()
    try:
        ready(url)
        client = cls(base_url=url, provider=provider)
    except BaseException:
        stop()
        raise
    client._provider_running = True
    return client


#: the start arguments both kinds of provider take
_START_KEYS = ("port", "env_vars", "workers")


def space_started(
    cls: Callable[..., _Client], repo_id: str, use_docker: bool, provider: Any, options: dict[str, Any]
) -> _Client:
    """A client of ``cls`` on the Hugging Face Space ``repo_id`` run locally: its registry
    image with a container provider (``use_docker``), else its checkout with a runtime
    provider (started, then stopped again on failure)."""
    options = dict(options)
    start = {key: options.pop(key) for key in _START_KEYS if key in options}
    if use_docker:
        image = space_image(repo_id, options.pop("tag", "latest"))
        return started(cls, image, docker_provider() if provider is None else provider, {**start, **options})
    if provider is None:
        space_image(repo_id)  # a malformed id fails before anything starts
        provider = uv_provider(repo_id, options)
    elif options:
        raise ValueError(f"from_env: {', '.join(sorted(options))} cannot be used with a provider instance")
    return _launched(
        cls, provider, lambda: provider.start(**start), lambda _url: provider.wait_for_ready(), provider.stop
    )
