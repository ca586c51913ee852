"""The errors of the environment adapters: bad serve targets and refused actions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.errors import ErrorCode, ProtocolError

__all__ = ["ActionOutsideSpace", "ActionRejected", "EnvTargetError", "json_pointer"]


def json_pointer(loc: Iterable[str | int]) -> str:
    """The JSON pointer (RFC 6901) of a path, e.g. ``["action", 0]`` -> ``/action/0``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc)


class EnvTargetError(ValueError):
    """A serve target (``MODULE:ATTR``, ``gymnasium:ENV_ID``) cannot give an environment.

    The message is one line, fit for a command line's error output.
    """


class ActionRejected(ProtocolError, ValueError):
    """An adapter refused a step's action: a ``VALIDATION_ERROR`` the environment never saw.

    It is a :class:`ProtocolError` (code ``VALIDATION_ERROR``, JSON ``pointer`` into the
    step's data, ``errors`` entries shaped like the schema validator's; the message reads
    like the validator's, ``Invalid action at POINTER: FAULT``) so that a server
    reports it as a validation error, and a :class:`ValueError` for plain Python callers.
    """

    def __init__(
        self,
        fault: str,
        *,
        loc: Sequence[str | int] = (),
        keyword: str = "action",
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        pointer = json_pointer(loc)
        message = f"Invalid action at {pointer or '/'}: {fault}"
        if errors is None:
            errors = [{"loc": list(loc), "msg": fault, "type": keyword, "pointer": pointer}]
        super().__init__(ErrorCode.VALIDATION_ERROR, message, pointer=pointer, keyword=keyword, errors=errors)


class ActionOutsideSpace(ActionRejected):
    """A Gymnasium action that is not a member of the environment's action space.

    ``space`` is the space's text (``Discrete(2)``); the message names it.
    """

    def __init__(self, fault: str, *, space: str, loc: Sequence[str | int] = ("action",)) -> None:
        super().__init__(f"{fault} (action space {space})", loc=loc, keyword="space")
        self.space = space
