"""``EnvClient`` with upstream OpenEnv 0.10's public API, on our client.

    class EchoEnv(EnvClient[EchoAction, EchoObservation, State]):   # upstream's typed-client shape
        def _step_payload(self, action): return action.model_dump()
        def _parse_result(self, payload): return StepResult(...)
        def _parse_state(self, payload): return State(**payload)

    env = EchoEnv(base_url="http://127.0.0.1:8000")
    env.reset(); env.step(EchoAction(message="hi")); env.close()      # no event loop: blocking
    async with EchoEnv(base_url=url) as env: await env.step(...)       # awaited, asyncio or trio

Calling modes, as upstream: with no event loop running, a call blocks and returns its result
(the client runs on the event loop thread the process's blocking clients share: see
``openenv_anyio.client.loop_thread``);
inside a running loop it returns an awaitable, or, before the client has picked a mode, an
:class:`~openenv_anyio.compat.results.AutoAsyncResult` that also resolves when touched. A
client is locked to the first mode it is used in (``modes``). Worker threads
(``asyncio.to_thread(env.step, action)``) are the blocking mode.

Underneath is a native :class:`openenv_anyio.client.EnvClient` per session, so resume and
exactly-once steps are on by default, and failures are our typed errors (subclasses of
``ConnectionError``, ``TimeoutError`` and, for error frames, ``RuntimeError``: what upstream
raises). Resuming rides out a restart of a server that keeps its sessions in a session store
(close 1012, ``EXT-HAND-1``): the native client keeps trying for its reconnect policy's
``within_s`` (``reconnect=ReconnectPolicy(within_s=...)``). Where we differ on purpose: after
``close()`` every call raises :class:`~openenv_anyio.client.NotConnected`; after a
connection is lost for good a ``step`` or ``state`` raises
:class:`~openenv_anyio.client.ConnectionDropped` (or the
:class:`~openenv_anyio.client.SessionNotFound` that ended it: never a silent fresh session),
while ``reset`` opens a new session, which starts a new episode anyway.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import typing
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Generic, TypeVar

import anyio

from ..client import ConnectionDropped, NotConnected, ReconnectPolicy, SessionNotFound
from ..client import EnvClient as NativeEnvClient
from ..client import StepResult as NativeStepResult
from ..client.hosted import HostedClient, loop_running
from ..client.loop_thread import LoopLease, LoopThread
from .bootstrap import Bootstrap, docker_provider, space_started, started
from .modes import ExecutionMode, ModeMixed, claim
from .results import AutoAsyncResult
from .sync_client import SyncEnvClient

__all__ = ["EnvClient"]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")
_T = TypeVar("_T")
_Client = TypeVar("_Client", bound="EnvClient[Any, Any, Any]")

CLIENT_MODES: Final = ("simulation", "production")


def normalize_mode(mode: str | None) -> str:
    """``mode`` (or ``OPENENV_CLIENT_MODE``, default simulation), checked as upstream does."""
    raw = os.environ.get("OPENENV_CLIENT_MODE", "simulation") if mode is None else mode
    if not isinstance(raw, str) or raw.lower() not in CLIENT_MODES:
        raise ValueError(
            f"Invalid mode: {raw!r}. Must be 'simulation' or 'production'. "
            "Set via constructor parameter or OPENENV_CLIENT_MODE environment variable."
        )
    return raw.lower()


_action_models: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()


def action_model(cls: type) -> Any:
    """The pydantic model a typed client declares as its action type (``EnvClient[Action, ...]``), or None."""
    try:
        return _action_models[cls]
    except KeyError:
        pass
    found: Any = None
    for klass in cls.__mro__:
        for base in klass.__dict__.get("__orig_bases__", ()):
            origin, args = typing.get_origin(base), typing.get_args(base)
            if isinstance(origin, type) and hasattr(origin, "_step_payload") and args:
                candidate = args[0]
                if isinstance(candidate, type) and callable(getattr(candidate, "model_validate", None)):
                    found = candidate
                break
        else:
            continue
        break
    _action_models[cls] = found
    return found


def observation_payload(result: NativeStepResult) -> dict[str, Any]:
    """An observation frame's ``data`` as upstream's ``_parse_result`` hooks receive it."""
    payload: dict[str, Any] = {"observation": result.observation, "reward": result.reward, "done": result.done}
    if result.metadata is not None:
        payload["metadata"] = result.metadata
    return payload


class EnvClient(ABC, Generic[ActT, ObsT, StateT]):
    """One environment session, with upstream 0.10's ``EnvClient`` API (see the module text).

    Typed clients subclass it and define ``_step_payload(action) -> dict``,
    ``_parse_result(payload) -> StepResult`` and ``_parse_state(payload) -> State``. Upstream's
    keywords are taken as they are; ``websocket_ping_*`` drive our client's keep-alive. Ours,
    keyword-only: ``reconnect`` (resume policy, on by default), ``pin_episode``, ``backend``
    (the event loop the blocking modes run on: ``"asyncio"`` or ``"trio"``) and any other
    keyword of :class:`openenv_anyio.client.EnvClient` (``token``, ``proxy``, ``ssl_context``...).
    """

    def __init__(
        self,
        base_url: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float | None = 60.0,
        max_message_size_mb: float = 100.0,
        websocket_ping_interval_s: float | None = 20.0,
        websocket_ping_timeout_s: float | None = 20.0,
        provider: Any = None,
        mode: str | None = None,
        headers: dict[str, str] | None = None,
        *,
        reconnect: bool | ReconnectPolicy = True,
        pin_episode: bool = False,
        backend: str = "asyncio",
        **options: Any,
    ) -> None:
        if base_url is None and provider is None:
            raise ValueError("EnvClient requires either base_url or provider.")
        self._mode = normalize_mode(mode)
        self._settings: dict[str, Any] = {
            "connect_timeout_s": connect_timeout_s,
            "message_timeout_s": message_timeout_s,
            "max_message_size_mb": max_message_size_mb,
            "ping_interval_s": websocket_ping_interval_s,
            "ping_timeout_s": websocket_ping_timeout_s,
            "headers": headers,
            "reconnect": reconnect,
            "pin_episode": pin_episode,
            **options,
        }
        self._backend = backend
        self._provider = provider
        self._provider_running = False
        self._base_url: str | None = None
        self._execution = ExecutionMode.UNCLAIMED
        self._hosted: HostedClient[NativeEnvClient] | None = None
        self._opening: anyio.Event | None = None
        self._loop_thread: LoopThread | None = None  # the shared loop its blocking calls run on
        self._lease: LoopLease | None = None  # its hold on that loop (a child uses its parent's)
        self._thread_lock = threading.Lock()
        self._closed = False
        self._children: list[EnvClient[Any, Any, Any]] = []
        self._sync_client: SyncEnvClient[ActT, ObsT, StateT] | None = None
        self._action_model = action_model(type(self))
        if base_url is not None:
            self._base_url = str(base_url).rstrip("/")
            self._native_client()  # every setting is checked now, not at the first call

    # -- what upstream exposes ---------------------------------------------------------------

    @property
    def base_url(self) -> str | None:
        """The server's base URL (read-only; None until a provider has started the server)."""
        return self._base_url

    @property
    def native(self) -> NativeEnvClient | None:
        """The native client of the current session (its ``resumes``, ``session_id``...), if open."""
        hosted = self._hosted
        return hosted.client if hosted is not None and hosted.alive else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r})"

    @abstractmethod
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        """The step frame's ``data`` for ``action``."""

    @abstractmethod
    def _parse_result(self, payload: dict[str, Any]) -> Any:
        """A ``StepResult`` from an observation frame's ``data``."""

    @abstractmethod
    def _parse_state(self, payload: dict[str, Any]) -> Any:
        """A state object from a state frame's ``data``."""

    def reset(self, **kwargs: Any) -> Any:
        """Start an episode; keywords go to the environment's ``reset`` (``seed``, ``episode_id``...)."""
        return self._dispatch(self._reset_async, **kwargs)

    def step(self, action: ActT, **kwargs: Any) -> Any:
        """Send one action; an action the declared pydantic model rejects raises its ValidationError here."""
        return self._dispatch(self._step_async, action, **kwargs)

    def state(self) -> Any:
        """The session's state, through ``_parse_state``."""
        return self._dispatch(self._state_async)

    def connect(self) -> Any:
        """Open the session now (calls open it when needed)."""
        return self._dispatch(self._connect_async)

    def disconnect(self) -> Any:
        """Close the session; a later call opens a new one."""
        return self._dispatch(self._disconnect_async)

    def close(self) -> Any:
        """Close the session (and every ``new_session`` child); later calls raise NotConnected."""
        return self._dispatch(self._close_async)

    def new_session(self) -> Any:
        """A connected client of the same class on the same server, closed with this one."""
        return self._dispatch(self._new_session_async)

    @classmethod
    def from_docker_image(cls: type[_Client], image: str, provider: Any = None, **kwargs: Any) -> Bootstrap[_Client]:
        """A handle that starts ``image`` with ``provider`` and connects: ``await`` it or ``.sync()`` it."""
        chosen = docker_provider() if provider is None else provider
        return Bootstrap(functools.partial(started, cls, image, chosen, kwargs))

    @classmethod
    def from_env(
        cls: type[_Client], repo_id: str, *, use_docker: bool = True, provider: Any = None, **provider_kwargs: Any
    ) -> Bootstrap[_Client]:
        """A handle that runs the Hugging Face Space ``repo_id`` locally and connects (see ``bootstrap``)."""
        return Bootstrap(functools.partial(space_started, cls, repo_id, use_docker, provider, provider_kwargs))

    def sync(self) -> SyncEnvClient[ActT, ObsT, StateT]:
        """The blocking face of this client (upstream's ``SyncEnvClient``)."""
        if self._sync_client is None:
            self._sync_client = SyncEnvClient(self)
        return self._sync_client

    def __enter__(self: _Client) -> _Client:
        self._blocking(self._connect_async)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._blocking(self._close_async)

    async def __aenter__(self: _Client) -> _Client:
        return await self._connect_public()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._awaited(self._close_async)

    # -- the requests, on whatever loop runs them ------------------------------------------------

    async def _reset_async(self, **kwargs: Any) -> Any:
        native = await self._native()
        try:
            result = await native.reset(**kwargs)
        except (ConnectionDropped, SessionNotFound):  # the session is gone for good: a reset starts over on a new one
            native = await self._reopen()
            result = await native.reset(**kwargs)
        return self._parse_result(observation_payload(result))

    async def _step_async(self, action: ActT, **kwargs: Any) -> Any:
        model = self._action_model
        if model is not None and isinstance(action, Mapping):
            action = model.model_validate(action)  # a ValidationError before anything is sent
        payload = self._step_payload(action)
        native = await self._native()
        return self._parse_result(observation_payload(await native.step(payload)))

    async def _state_async(self) -> Any:
        native = await self._native()
        state = await native.state()
        return self._parse_state({"episode_id": state.episode_id, "step_count": state.step_count, **state.extra})

    async def _connect_async(self: _Client) -> _Client:
        await self._native()
        return self

    async def _connect_public(self: _Client) -> _Client:
        """Claim the async mode and open the session through the public :meth:`connect`, which a
        typed client may override (upstream's ``async with`` and bootstrap handles call it)."""
        self._execution = claim(self._execution, ExecutionMode.ASYNC)
        opened = self.connect()
        if inspect.isawaitable(opened):
            await opened
        return self

    async def _disconnect_async(self) -> None:
        hosted, self._hosted = self._hosted, None
        if hosted is not None:
            await hosted.close()

    async def _close_async(self) -> None:
        self._closed = True
        try:
            children, self._children = self._children, []
            for child in children:  # they live on this client's loop
                with anyio.CancelScope(shield=True):
                    await child._close_async()
            await self._disconnect_async()
        finally:
            if self._provider_running:
                self._provider_running = False
                await anyio.to_thread.run_sync(_stop_provider, self._provider)

    async def _new_session_async(self) -> EnvClient[Any, Any, Any]:
        child = self._session_client()
        if self._execution is ExecutionMode.SYNC:
            child._execution = ExecutionMode.SYNC
            child._loop_thread = self._loop_thread  # the parent's loop, held by the parent's lease
            await child._connect_async()
        else:
            await child._awaited(child._connect_async)
        self._children.append(child)
        return child

    def _session_client(self) -> EnvClient[Any, Any, Any]:
        """A new, unconnected client of this class for the same server (upstream's rules)."""
        if self._base_url is None:
            raise NotConnected(f"{self!r} has no server yet: connect it before opening new sessions")
        signature = inspect.signature(type(self))
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
        candidates = {
            "base_url": self._base_url,
            "connect_timeout_s": self._settings["connect_timeout_s"],
            "message_timeout_s": self._settings["message_timeout_s"],
            "max_message_size_mb": self._settings["max_message_size_mb"],
            "websocket_ping_interval_s": self._settings["ping_interval_s"],
            "websocket_ping_timeout_s": self._settings["ping_timeout_s"],
            "mode": self._mode,
            "headers": self._settings["headers"],
        }
        child = type(self)(**{k: v for k, v in candidates.items() if takes_any or k in signature.parameters})
        child._settings = dict(self._settings)
        child._backend = self._backend
        return child

    # -- the session underneath ----------------------------------------------------------------

    def _native_client(self) -> NativeEnvClient:
        assert self._base_url is not None
        return NativeEnvClient(self._base_url, **self._settings)

    async def _native(self) -> NativeEnvClient:
        hosted = self._hosted
        if hosted is not None and hosted.alive:
            return hosted.client
        return await self._reopen(fresh=False)

    async def _reopen(self, *, fresh: bool = True) -> NativeEnvClient:
        """Open a session (a new one when ``fresh``); one opening at a time."""
        while self._opening is not None:
            await self._opening.wait()
        hosted = self._hosted
        if not fresh and hosted is not None and hosted.alive:
            return hosted.client
        if self._closed:
            raise NotConnected(f"{self!r} is closed; create a new client for a new session")
        self._opening = opening = anyio.Event()
        try:
            if hosted is not None:
                self._hosted = None
                await hosted.close()
            if self._base_url is None:
                self._base_url = str(await anyio.to_thread.run_sync(_start_provider, self._provider)).rstrip("/")
                self._provider_running = True
            self._hosted = await HostedClient.open(self._native_client())
            if self._lease is not None:
                self._lease.resident = self._hosted  # closed when a dropped client lets go of the loop
            return self._hosted.client
        finally:
            self._opening = None
            opening.set()

    # -- calling modes ---------------------------------------------------------------------------

    def _dispatch(self, request: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> Any:
        """``request(*args, **kwargs)``: its awaitable inside a running loop, its result
        otherwise (upstream's rules, see ``modes``)."""
        execution = self._execution
        if execution is ExecutionMode.ASYNC:
            if loop_running():
                return request(*args, **kwargs)
            return self._blocking(functools.partial(request, *args, **kwargs), handover=True)
        call = functools.partial(request, *args, **kwargs)
        if execution is ExecutionMode.SYNC:
            loop_thread = self._loop_thread
            if loop_thread is not None and loop_thread.in_loop_thread():
                return call()  # code running on the client's own loop (a hook calling step)
            return self._blocking(call)
        if loop_running():
            return AutoAsyncResult(self, call)
        return self._blocking(call)

    async def _awaited(self, call: Callable[[], Awaitable[_T]]) -> _T:
        self._execution = claim(self._execution, ExecutionMode.ASYNC)
        return await call()

    def _blocking(self, call: Callable[[], Awaitable[_T]], *, handover: bool = False) -> _T:
        """Run ``call`` on the client's loop thread and wait for it."""
        if handover and self._hosted is not None and self._hosted.alive:
            raise ModeMixed(self._execution)  # its async session is still open on another loop
        self._execution = claim(self._execution, ExecutionMode.SYNC, handover=handover)
        if self._closed:
            raise NotConnected(f"{self!r} is closed; create a new client for a new session")
        loop_thread = self._loop_thread
        if loop_thread is None:
            with self._thread_lock:
                if self._loop_thread is None:
                    self._lease = LoopLease(self._backend)
                    # a client dropped without close() still closes its session and lets go of the loop
                    weakref.finalize(self, self._lease.release)
                    self._loop_thread = self._lease.loop
                loop_thread = self._loop_thread
        try:
            return loop_thread.call(call)
        finally:
            if self._closed and self._lease is not None:
                self._lease.release()


def _start_provider(provider: Any) -> str:
    """Start a container or runtime provider the way upstream's clients drive one; its base URL."""
    if hasattr(provider, "start_container"):
        url = provider.start_container()
        provider.wait_for_ready(url)
    elif hasattr(provider, "start"):
        url = provider.start()
        provider.wait_for_ready()
    else:
        raise TypeError("provider must define start_container() or start()")
    return str(url)


def _stop_provider(provider: Any) -> None:
    stop = getattr(provider, "stop_container", None) or getattr(provider, "stop", None)
    if stop is not None:
        stop()
