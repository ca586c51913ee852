"""One environment instance bound to the runner its calls run on.

:class:`BoundEnv` is what a session or a request drives, as a ``Protocol`` with two
implementations: :class:`InProcessEnv` here, and
:class:`~openenv_anyio.server.isolation.IsolatedEnv` (the instance in a process of its own).
A method added to the protocol and missing from either is a type error.

An :class:`InProcessEnv` is created from the factory on the session's runner (so a thread-affine environment is built on
the thread that will serve it), it answers reset/step/state with values ready for frames,
awaits ``async def`` methods on the event loop and sends sync ones to the runner.
Exceptions of the environment propagate unchanged; the session turns them into frames.

Environment code that raises a ``BaseException`` which is not an ``Exception`` ends only its
session (``SRV-FAULT-1``): the runners convert it where env code runs (:mod:`.faults`).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import weakref
from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar, Protocol

import trio

from ...environment import EnvFactory, LiftedObservation, lift_observation, normalise_state
from ...restoration import (
    RestoreFailed,
    RestoreWay,
    Snapshot,
    SnapshotError,
    SnapshotFailed,
    restore_way,
    seal_snapshot,
)
from .action_check import ActionCheck, action_check_for
from .error_text import exception_text
from .faults import EnvironmentAborted, EnvironmentLost, await_env_code, call_env_code
from .runner import EnvRunner, InlineRunner, ThreadNotStarted, ThreadRunner

__all__ = [
    "BoundEnv",
    "EnvironmentAborted",
    "EnvironmentLost",
    "FactoryFailure",
    "InProcessEnv",
    "declared_non_blocking",
]

_METHODS = ("reset", "step", "close")
log = logging.getLogger("openenv_anyio.server")


class FactoryFailure(Exception):
    """The factory raised while building an environment (``WS-FACT-1``)."""

    def __init__(self, factory: EnvFactory, cause: BaseException) -> None:
        self.factory_name = getattr(factory, "__qualname__", None) or type(factory).__name__
        if isinstance(cause, EnvironmentAborted):
            cause = cause.cause
        self.cause = cause
        super().__init__(f"Failed to create environment ({self.factory_name}): {exception_text(cause)}")


def declared_non_blocking(factory: Any) -> bool | None:
    """``NON_BLOCKING`` as declared by a factory class (or a partial of one), else ``None``."""
    target = factory.func if isinstance(factory, partial) else factory
    if isinstance(target, type):
        return bool(getattr(target, "NON_BLOCKING", False))
    return None


def read_state(env: Any) -> Any:
    """Read ``env.state`` whether it is a property or a zero-argument method (sync part)."""
    value = env.state
    return value() if callable(value) else value


def _reset_then_state(env: Any, kwargs: Mapping[str, Any]) -> tuple[Any, Any]:
    """Reset, then read the new episode's state in the same call (one thread hop)."""
    observation = env.reset(**kwargs)
    if inspect.isawaitable(observation):
        return observation, None
    try:
        state = read_state(env)
    except Exception:
        state = None
    return observation, state


def accepted_keywords(method: Any) -> frozenset[str] | None:
    """The keyword names ``method`` accepts; ``None`` when it takes ``**kwargs`` (or is opaque).

    Bound methods are answered once per function (every session of a server binds the same
    one; ``inspect.signature`` was a visible share of a connection's cost).
    """
    function = getattr(method, "__func__", None)
    if function is None:
        return _keywords_of(method)
    try:
        return _keywords_by_function[function]
    except (KeyError, TypeError):  # TypeError: not weakly referenceable
        pass
    keywords = _keywords_of(method)
    with contextlib.suppress(TypeError):
        _keywords_by_function[function] = keywords
    return keywords


_keywords_by_function: weakref.WeakKeyDictionary[Any, frozenset[str] | None] = weakref.WeakKeyDictionary()


def _keywords_of(method: Any) -> frozenset[str] | None:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


class BoundEnv(Protocol):
    """An environment instance plus where its calls run; one per session (or per HTTP request).

    Exceptions of the environment propagate unchanged (the session turns them into frames);
    :class:`EnvironmentAborted` and :class:`EnvironmentLost` end the session."""

    #: whether :meth:`watch_lost` can ever find the environment gone (a session runs it only then)
    WATCHED: ClassVar[bool]

    @property
    def env(self) -> Any:
        """The instance as the server reads it without calling it: schemas, metadata, tools."""
        ...

    @property
    def runner(self) -> EnvRunner:
        """Where the instance's sync methods (its tools') run."""
        ...

    @property
    def name(self) -> str:
        """The environment's class name, for log lines."""
        ...

    async def reset(self, kwargs: Mapping[str, Any]) -> tuple[LiftedObservation, dict[str, Any] | None]:
        """Reset; returns the lifted observation and the new state (``None`` if unreadable)."""
        ...

    def check_action(self, action: Mapping[str, Any]) -> Any:
        """Validate ``action`` (raises ProtocolError) and return what ``step`` receives."""
        ...

    async def step(self, action: Any) -> LiftedObservation:
        """Step with an already checked action."""
        ...

    async def state(self) -> dict[str, Any]:
        """The ``data`` of a ``state`` frame."""
        ...

    async def snapshot(self, limit: int) -> Snapshot:
        """The episode, from the environment's ``snapshot()`` (``openenv_anyio.restoration``);
        :class:`SnapshotError` when it has none, fails or is over ``limit`` bytes."""
        ...

    async def restore(self, snapshot: Snapshot) -> None:
        """Put the environment back into the episode ``snapshot`` keeps (its ``restore``);
        :class:`RestoreFailed` when that fails."""
        ...

    async def watch_lost(self) -> EnvironmentLost | None:
        """Return once the environment is found gone between requests (``SRV-ISO-2``);
        ``None`` when it will not be (it ended otherwise)."""
        ...

    def still_closing(self) -> bool:
        """Whether a ``close()`` that :meth:`aclose` stopped waiting for still runs."""
        ...

    async def aclose(self) -> None:
        """Close the environment (once, errors logged); cancellable: the caller bounds it."""
        ...


class InProcessEnv:
    """An environment instance in this process plus its runner (see :class:`BoundEnv`).

    Reset parameters the environment's ``reset`` does not accept are dropped, as the
    reference server does (a client may always send ``seed`` and ``episode_id``).
    """

    __slots__ = ("env", "runner", "action_check", "_async", "_closed", "_reset_keywords")

    def __init__(self, env: Any, runner: EnvRunner) -> None:
        self.env = env
        self.runner = runner
        self.action_check: ActionCheck = action_check_for(getattr(env, "action_schema", None))
        self._async = {name: inspect.iscoroutinefunction(getattr(env, name, None)) for name in _METHODS}
        self._closed = False
        self._reset_keywords = accepted_keywords(getattr(env, "reset", None))

    @classmethod
    async def create(cls, factory: EnvFactory, *, inline: bool | None = None) -> InProcessEnv:
        """Build an environment with ``factory`` on the runner chosen for it.

        ``inline=None`` follows the environment's ``NON_BLOCKING`` declaration.
        Raises :class:`FactoryFailure` when the factory raises, :class:`ThreadNotStarted` when
        the session's thread cannot be started.
        """
        declared = declared_non_blocking(factory)
        runner: EnvRunner = (
            InlineRunner() if inline is True or (inline is None and declared) else await ThreadRunner.open()
        )
        try:
            env = await runner.run(factory)
        except ThreadNotStarted:
            await runner.aclose()
            raise
        except Exception as exc:
            await runner.aclose()
            raise FactoryFailure(factory, exc) from exc
        except BaseException:
            with trio.CancelScope(shield=True):  # cancelled while the factory runs: the thread ends after it
                await runner.aclose()
            raise
        if isinstance(runner, ThreadRunner) and inline is None and getattr(env, "NON_BLOCKING", False):
            await runner.aclose()
            runner = InlineRunner()
        return cls(env, runner)

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.env, name)
        if self._async[name]:
            return await await_env_code(method(*args, **kwargs))
        return await self.runner.run(partial(method, *args, **kwargs))

    async def reset(self, kwargs: Mapping[str, Any]) -> tuple[LiftedObservation, dict[str, Any] | None]:
        """Reset; returns the lifted observation and the new state (``None`` if unreadable)."""
        accepted = self._reset_keywords
        if accepted is not None and not accepted.issuperset(kwargs):
            kwargs = {key: value for key, value in kwargs.items() if key in accepted}
        if self._async["reset"]:
            observation = await await_env_code(self.env.reset(**kwargs))
            state = None
        else:
            observation, state = await self.runner.run(partial(_reset_then_state, self.env, kwargs))
        lifted: LiftedObservation = call_env_code(lift_observation, observation)
        try:
            if state is None:
                state = await self.runner.run(partial(read_state, self.env))
            elif inspect.isawaitable(state):
                state = await await_env_code(state)
            return lifted, call_env_code(normalise_state, state)
        except Exception:
            return lifted, None

    def check_action(self, action: Mapping[str, Any]) -> Any:
        """Validate ``action`` (raises ProtocolError) and return what ``step`` receives."""
        return self.action_check(action)

    async def step(self, action: Any) -> LiftedObservation:
        """Step with an already checked action."""
        lifted: LiftedObservation = call_env_code(lift_observation, await self._call("step", action))
        return lifted

    async def state(self) -> dict[str, Any]:
        """The ``data`` of a ``state`` frame."""
        state: dict[str, Any] = call_env_code(normalise_state, await self.runner.run(partial(read_state, self.env)))
        return state

    async def _call_optional(self, name: str, *args: Any) -> Any:
        """Call a method not every environment has (``snapshot``, ``restore``), sync or async."""
        method = getattr(self.env, name)
        if inspect.iscoroutinefunction(method):
            return await await_env_code(method(*args))
        return await self.runner.run(partial(method, *args))

    async def snapshot(self, limit: int) -> Snapshot:
        """The environment's ``snapshot()`` sealed (see :class:`BoundEnv`)."""
        if restore_way(self.env) is not RestoreWay.SNAPSHOT:
            raise SnapshotFailed(f"{self.name} does not snapshot")
        try:
            value = await self._call_optional("snapshot")
        except SnapshotError:
            raise
        except Exception as exc:  # the environment's own snapshot() failed
            raise SnapshotFailed(f"{self.name}.snapshot() raised {exception_text(exc)}") from None
        return seal_snapshot(value, limit=limit)

    async def restore(self, snapshot: Snapshot) -> None:
        """The environment's ``restore(snapshot)`` (see :class:`BoundEnv`)."""
        if restore_way(self.env) is not RestoreWay.SNAPSHOT:
            raise RestoreFailed(f"{self.name} does not restore snapshots")
        try:
            await self._call_optional("restore", snapshot.value())
        except SnapshotError:
            raise
        except Exception as exc:  # the environment's own restore() failed
            raise RestoreFailed(f"{self.name}.restore() raised {exception_text(exc)}") from None

    @property
    def name(self) -> str:
        """The environment's class name, for log lines."""
        return type(self.env).__qualname__

    async def watch_lost(self) -> EnvironmentLost | None:
        """Return once the environment is found gone between requests (``SRV-ISO-2``; only
        an environment in a process of its own can be: :attr:`WATCHED`); ``None`` when it
        will not be (it ended otherwise). Its session runs it beside its requests."""
        return None

    #: whether :meth:`watch_lost` can ever find the environment gone (a session runs it only then)
    WATCHED: ClassVar[bool] = False

    def still_closing(self) -> bool:
        """Whether a ``close()`` that :meth:`aclose` stopped waiting for still runs (on the
        session's thread: a thread cannot be stopped from outside)."""
        return isinstance(self.runner, ThreadRunner) and self.runner.alive

    async def aclose(self) -> None:
        """Call the environment's ``close()`` (once, errors swallowed) and stop the runner.

        Cancellable: the caller bounds it (a cancelled sync ``close()`` keeps running on the
        session's thread, see :meth:`still_closing`)."""
        if self._closed:
            return
        self._closed = True
        close = getattr(self.env, "close", None)
        on_loop = callable(close) and self._async["close"]
        try:
            if on_loop and close is not None:
                await await_env_code(close())
            # a sync close() is the runner's last call: with a thread, one hand-off for both
            await self.runner.aclose(close if callable(close) and not on_loop else None)
        except Exception as exc:  # EnvironmentAborted included; cancellation and a Ctrl-C propagate
            log.error("environment close() raised %s", exception_text(exc), exc_info=exc)
        finally:
            with trio.CancelScope(shield=True):  # does not wait: the thread is told to stop
                await self.runner.aclose()  # when close() raised or was cancelled on the loop
