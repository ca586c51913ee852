"""Checks a step's action against the environment's declared action schema (``WS-STEP-2``).

The declared schema (a JSON Schema mapping or a pydantic model) is compiled once per
distinct schema and cached. The fast engine gives the verdict; only an invalid action pays
for the reference engine's explanation (JSON pointer, keyword, message). When the schema is
a pydantic model, the valid action is turned into an instance of it for ``step``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core import ErrorCode, ProtocolError, Validator, dumps
from ...environment import is_model_class, schema_of

__all__ = ["ActionCheck", "action_check_for", "relocate"]


def relocate(error: ProtocolError, prefix: str) -> ProtocolError:
    """The same error with every location put under ``prefix`` (e.g. ``/data``)."""
    head = [part for part in prefix.split("/")[1:]]
    entries = [
        {**entry, "pointer": prefix + entry.get("pointer", ""), "loc": [*head, *entry.get("loc", [])]}
        for entry in error.errors or []
    ]
    pointer = prefix + error.pointer
    first = entries[0]["msg"] if entries else error.message
    return ProtocolError(
        ErrorCode.VALIDATION_ERROR,
        f"Invalid action at {pointer}: {first}",
        pointer=pointer,
        keyword=error.keyword,
        errors=entries,
    )


def _pydantic_error(exc: Any, prefix: str) -> ProtocolError:
    head = [part for part in prefix.split("/")[1:]]
    entries: list[dict[str, Any]] = []
    for item in exc.errors(include_url=False):
        loc = [*head, *(str(part) for part in item.get("loc", ()))]
        entries.append(
            {
                "loc": loc,
                "msg": str(item.get("msg", "")),
                "type": str(item.get("type", "")),
                "pointer": "".join("/" + part for part in loc),
            }
        )
    first = entries[0] if entries else {"pointer": prefix, "msg": str(exc)}
    return ProtocolError(
        ErrorCode.VALIDATION_ERROR,
        f"Invalid action at {first['pointer']}: {first['msg']}",
        pointer=first["pointer"],
        errors=entries,
    )


class ActionCheck:
    """Validates actions for one declared schema and builds what ``step`` receives."""

    __slots__ = ("schema", "_validator", "_model")

    def __init__(self, declared: Any) -> None:
        schema = schema_of(declared)
        self.schema = schema
        self._validator = Validator(schema) if schema is not None else None
        self._model = declared if is_model_class(declared) else None

    def __call__(self, action: Mapping[str, Any], *, prefix: str = "/data") -> Any:
        """The value to pass to ``step``; raises :class:`ProtocolError` (VALIDATION_ERROR)."""
        validator = self._validator
        if validator is not None and not validator.is_valid(action):
            try:
                validator.check(action, what="action")
            except ProtocolError as error:
                raise relocate(error, prefix) from None
        model = self._model
        if model is None:
            return action
        try:
            return model.model_validate(action)
        except Exception as exc:  # pydantic.ValidationError, without importing pydantic
            if callable(getattr(exc, "errors", None)):
                raise _pydantic_error(exc, prefix) from None
            raise


_NO_CHECK = ActionCheck(None)
_CACHE_SIZE = 128
_cache: dict[str, ActionCheck] = {}


def action_check_for(declared: Any) -> ActionCheck:
    """The (cached) check for a declared action schema; a no-op check when none is declared."""
    if declared is None:
        return _NO_CHECK
    if isinstance(declared, Mapping):
        key = "json:" + dumps(declared)
    else:  # a model class: identity is the key (a class lives as long as its module)
        key = f"model:{id(declared)}"
    check = _cache.get(key)
    if check is None:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        check = _cache[key] = ActionCheck(declared)
    return check
