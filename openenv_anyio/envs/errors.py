"""The errors of the environment adapters: bad serve targets and refused actions."""

from __future__ import annotations

from typing import Any

from ..core.errors import ErrorCode, ProtocolError

__all__ = ["ActionOutsideSpace", "ActionRejected", "EnvTargetError"]


class EnvTargetError(ValueError):
    """A serve target (``MODULE:ATTR``, ``gymnasium:ENV_ID``) cannot give an environment.

    The message is one line, fit for a command line's error output.
    """


class ActionRejected(ProtocolError, ValueError):
    """An adapter refused a step's action: a ``VALIDATION_ERROR`` the environment never saw.

    It is a :class:`ProtocolError` (code ``VALIDATION_ERROR``, JSON ``pointer`` into the
    step's data, ``errors`` entries shaped like the schema validator's) so that a server
    reports it as a validation error, and a :class:`ValueError` for plain Python callers.
    """

    def __init__(self, message: str, *, pointer: str = "", keyword: str = "action") -> None:
        loc: list[Any] = [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]
        entry = {"loc": loc, "msg": message, "type": keyword, "pointer": pointer}
        super().__init__(ErrorCode.VALIDATION_ERROR, message, pointer=pointer, keyword=keyword, errors=[entry])


class ActionOutsideSpace(ActionRejected):
    """A Gymnasium action that is not a member of the environment's action space.

    ``space`` is the space's text (``Discrete(2)``); the message names it.
    """

    def __init__(self, message: str, *, space: str, pointer: str = "") -> None:
        super().__init__(f"{message} (action space {space})", pointer=pointer, keyword="space")
        self.space = space
