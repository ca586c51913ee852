"""Environment code raising a ``BaseException`` that is not an ``Exception`` (``SRV-FAULT-1``).

``sys.exit()``, ``KeyboardInterrupt``, ``GeneratorExit`` or a library's own ``BaseException``
raised by environment code would unwind through the server's nursery and stop the whole
server: it becomes :class:`EnvironmentAborted`, an ``Exception`` that ends only its session.

The conversion happens where environment code runs and nowhere else: in the session's
worker thread, around an inline call, around an env coroutine awaited on the loop. A
``KeyboardInterrupt`` that trio's SIGINT handler raises in the server's own code (between
the thread hop and the answer, say) is the user's Ctrl-C and propagates as it is; converting
it further out would take it for the environment raising it, end one session and keep the
process running. Cancellation is never converted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import outcome
import trio

from ...core import CloseCode
from .error_text import exception_text

__all__ = ["EnvironmentAborted", "EnvironmentLost", "aborted_by", "await_env_code", "call_env_code", "env_outcome"]


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


def _raise_aborted(exc: BaseException) -> None:
    """Raise the :class:`EnvironmentAborted` that env code raising ``exc`` means, if any."""
    aborted = aborted_by(exc)
    if aborted is not None:
        raise aborted from exc


def env_outcome(fn: Callable[[], Any]) -> outcome.Outcome[Any]:
    """Call environment code ``fn`` and capture what it did (in a worker thread)."""
    result: outcome.Outcome[Any] = outcome.capture(fn)
    if type(result) is outcome.Error:
        aborted = aborted_by(result.error)
        if aborted is not None:
            aborted.__cause__ = result.error
            result = outcome.Error(aborted)
    return result


@trio.lowlevel.enable_ki_protection
def call_env_code(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)``, environment code or code that calls into it (an observation's own
    ``model_dump``), on the event loop's thread, with trio's KeyboardInterrupt protection (as
    :func:`await_env_code`)."""
    try:
        return fn(*args)
    except BaseException as exc:
        _raise_aborted(exc)
        raise


@trio.lowlevel.enable_ki_protection
async def await_env_code(call: Awaitable[Any]) -> Any:
    """Await an environment coroutine on the event loop, with trio's KeyboardInterrupt
    protection: a Ctrl-C that arrives while its code holds the loop is the process's,
    delivered to the main task, never raised inside env code as if the env had raised it."""
    try:
        return await call
    except BaseException as exc:
        _raise_aborted(exc)
        raise
