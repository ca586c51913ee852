"""One environment instance bound to the runner its calls run on.

Created from the factory on the session's runner (so a thread-affine environment is built on
the thread that will serve it), it answers reset/step/state with values ready for frames,
awaits ``async def`` methods on the event loop and sends sync ones to the runner.
Exceptions of the environment propagate unchanged; the session turns them into frames.

Environment code that raises a ``BaseException`` which is not an ``Exception`` (``sys.exit()``,
``KeyboardInterrupt``, ``GeneratorExit``, a library's own) would otherwise unwind through the
server's nursery and stop the whole server: here it becomes :class:`EnvironmentAborted`, an
``Exception`` that ends only its session (``SRV-FAULT-1``). Cancellation is never converted.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import weakref
from collections.abc import Awaitable, Mapping
from functools import partial
from typing import Any, ClassVar

import trio

from ..core import CloseCode
from ..environment import EnvFactory, LiftedObservation, lift_observation, normalise_state
from .action_check import ActionCheck, action_check_for
from .env_runner import EnvRunner, InlineRunner, ThreadRunner
from .error_text import exception_text

__all__ = ["BoundEnv", "EnvironmentAborted", "EnvironmentLost", "FactoryFailure", "aborted_by", "declared_non_blocking"]

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


class EnvironmentAborted(Exception):
    """Environment code raised ``cause``, a ``BaseException`` that is not an ``Exception``:
    the request fails and the session ends (``SRV-FAULT-1``); the server goes on.

    ``close_code`` and ``close_reason`` are what the session's connection is closed with."""

    close_code: CloseCode = CloseCode.INTERNAL_ERROR
    close_reason: str = "environment aborted"

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(exception_text(cause))


class EnvironmentLost(EnvironmentAborted):
    """The environment's own process is gone (``--isolate process``): it died (a signal, an
    ``os._exit``) or was stopped after the step timeout. The request fails and the session
    ends with close 4410 (``SRV-ISO-2``); ``reason`` says what happened, in the server's own
    words (it carries nothing of the environment's, so clients always see it)."""

    close_code = CloseCode.ENVIRONMENT_LOST
    close_reason = "environment lost"

    def __init__(self, reason: str) -> None:
        Exception.__init__(self, reason)
        self.cause = self


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(lambda inner: isinstance(inner, trio.Cancelled)) is not None
    return False


def aborted_by(exc: BaseException) -> EnvironmentAborted | None:
    """What environment code raising ``exc`` means for the server: ``None`` when ``exc``
    propagates as it is (an ``Exception``, or a cancellation), else the session's end."""
    if isinstance(exc, Exception) or _is_cancellation(exc):
        return None
    return EnvironmentAborted(exc)


@trio.lowlevel.enable_ki_protection
async def _awaited_on_loop(call: Awaitable[Any]) -> Any:
    """An async env method's coroutine, awaited with trio's KeyboardInterrupt protection (as
    :class:`~.env_runner.InlineRunner` runs sync calls): a Ctrl-C is the process's, delivered
    to the main task, never raised inside env code as if the env had raised it."""
    return await call


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
        p.name for p in parameters if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


class BoundEnv:
    """An environment instance plus its runner; one per session (or per HTTP request).

    Reset parameters the environment's ``reset`` does not accept are dropped, as the
    reference server does (a client may always send ``seed`` and ``episode_id``).
    """

    __slots__ = ("env", "runner", "action_check", "_async", "_closed", "_reset_keywords")

    def __init__(self, env: Any, runner: EnvRunner) -> None:
        self.env = env
        self.runner = runner
        self.action_check: ActionCheck = action_check_for(getattr(env, "action_schema", None))
        self._async = {
            name: inspect.iscoroutinefunction(getattr(env, name, None)) for name in _METHODS
        }
        self._closed = False
        self._reset_keywords = accepted_keywords(getattr(env, "reset", None))

    @classmethod
    async def create(cls, factory: EnvFactory, *, inline: bool | None = None) -> BoundEnv:
        """Build an environment with ``factory`` on the runner chosen for it.

        ``inline=None`` follows the environment's ``NON_BLOCKING`` declaration.
        Raises :class:`FactoryFailure` when the factory raises.
        """
        declared = declared_non_blocking(factory)
        runner: EnvRunner = (
            InlineRunner() if inline is True or (inline is None and declared) else await ThreadRunner.open()
        )
        try:
            env = await runner.run(factory)
        except BaseException as exc:
            if isinstance(exc, Exception) or aborted_by(exc) is not None:
                await runner.aclose()
                raise FactoryFailure(factory, exc) from exc
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
            return await _awaited_on_loop(method(*args, **kwargs))
        return await self.runner.run(partial(method, *args, **kwargs))

    async def reset(self, kwargs: Mapping[str, Any]) -> tuple[LiftedObservation, dict[str, Any] | None]:
        """Reset; returns the lifted observation and the new state (``None`` if unreadable)."""
        accepted = self._reset_keywords
        if accepted is not None and not accepted.issuperset(kwargs):
            kwargs = {key: value for key, value in kwargs.items() if key in accepted}
        try:
            if self._async["reset"]:
                observation = await _awaited_on_loop(self.env.reset(**kwargs))
                state = None
            else:
                observation, state = await self.runner.run(partial(_reset_then_state, self.env, kwargs))
            lifted = lift_observation(observation)
            try:
                if state is None:
                    state = await self.runner.run(partial(read_state, self.env))
                elif inspect.isawaitable(state):
                    state = await state
                return lifted, normalise_state(state)
            except Exception:
                return lifted, None
        except BaseException as exc:
            aborted = aborted_by(exc)
            if aborted is None:
                raise
            raise aborted from exc

    def check_action(self, action: Mapping[str, Any]) -> Any:
        """Validate ``action`` (raises ProtocolError) and return what ``step`` receives."""
        return self.action_check(action)

    async def step(self, action: Any) -> LiftedObservation:
        """Step with an already checked action."""
        try:
            return lift_observation(await self._call("step", action))
        except BaseException as exc:
            aborted = aborted_by(exc)
            if aborted is None:
                raise
            raise aborted from exc

    async def state(self) -> dict[str, Any]:
        """The ``data`` of a ``state`` frame."""
        try:
            return normalise_state(await self.runner.run(partial(read_state, self.env)))
        except BaseException as exc:
            aborted = aborted_by(exc)
            if aborted is None:
                raise
            raise aborted from exc

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
        return isinstance(self.runner, ThreadRunner) and self.runner.thread.is_alive()

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
                await _awaited_on_loop(close())
            # a sync close() is the runner's last call: with a thread, one hand-off for both
            await self.runner.aclose(close if callable(close) and not on_loop else None)
        except BaseException as exc:
            if not isinstance(exc, Exception) and aborted_by(exc) is None:
                raise  # cancelled
            log.error("environment close() raised %s", exception_text(exc), exc_info=exc)
        finally:
            with trio.CancelScope(shield=True):  # does not wait: the thread is told to stop
                await self.runner.aclose()  # when close() raised or was cancelled on the loop
