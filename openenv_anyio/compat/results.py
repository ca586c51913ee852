"""What the compat clients return: upstream's result shapes, without upstream installed.

:class:`StepResult` has the fields of upstream's ``openenv.core.client_types.StepResult``
(a typed client may return upstream's own instead: the clients pass whatever its
``_parse_result`` builds through untouched). :class:`AutoAsyncResult` is what a call made
inside a running event loop returns before the client has picked a calling mode: awaiting
it runs the call on that loop; touching it (an attribute, ``bool()``) runs it blocking.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .client_calls import ClientCalls

__all__ = ["AutoAsyncResult", "StepResult"]

ObsT = TypeVar("ObsT")
_T = TypeVar("_T")


@dataclass(slots=True)
class StepResult(Generic[ObsT]):
    """One step's (or reset's) result: the observation, its reward and whether the episode ended."""

    observation: ObsT
    reward: float | bool | None = None
    done: bool = False
    #: the environment's metadata beside the observation, when the server sends it
    metadata: dict[str, Any] | None = None


class AutoAsyncResult(Generic[_T]):
    """A call's pending result: ``await`` it (async mode) or touch it (runs it blocking).

    Nothing runs until one of the two happens, as with upstream's client.
    """

    __slots__ = ("_client", "_call", "_resolved", "_value")

    def __init__(self, client: ClientCalls[Any], call: Callable[[], Awaitable[_T]]) -> None:
        self._client = client
        self._call = call
        self._resolved = False
        self._value: _T | None = None

    def __await__(self) -> Generator[Any, None, _T]:
        return self._client._awaited(self._call).__await__()

    def _result(self) -> _T:
        if not self._resolved:
            self._value = self._client._blocking(self._call)
            self._resolved = True
        return self._value  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._result(), name)

    def __bool__(self) -> bool:
        return bool(self._result())

    def __repr__(self) -> str:
        return repr(self._value) if self._resolved else f"<{type(self).__name__} pending>"
