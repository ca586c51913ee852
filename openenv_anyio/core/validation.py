"""Validate JSON values against the spec's schemas with two engines and one verdict.

``jsonschema`` is the reference: the most standard-faithful engine, used wherever a human
reads the error. ``jsonschema_rs`` is compiled and much faster, used on the
hot path to answer "valid or not"; only an invalid value pays for the reference's
explanation. The test suite proves that both engines give the same verdict.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import jsonschema_rs
import referencing
import referencing.jsonschema

from .errors import MAX_MESSAGE_CHARS, ErrorCode, ProtocolError, clip_message
from .spec import Spec, build_rs_registry, load_spec, sender_view

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["MAX_FAULTS", "SchemaFault", "Validator", "sender_validator", "spec_validator"]

#: At most this many faults are listed in a VALIDATION_ERROR's ``errors``.
MAX_FAULTS = 32


def _pointer(path: Iterable[str | int]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


@dataclass(frozen=True, slots=True)
class SchemaFault:
    """One reason a value fails a schema: where (JSON pointer), which keyword, and why."""

    pointer: str
    keyword: str
    message: str
    schema_path: str
    path: tuple[str | int, ...] = ()

    def as_error_entry(self) -> dict[str, Any]:
        """The entry for an error frame's ``errors`` list (pydantic-like ``loc``/``msg``/``type``).

        ``loc`` keeps array indexes as integers, as pydantic does; ``pointer`` is the same
        place as a JSON pointer.
        """
        return {"loc": list(self.path), "msg": self.message, "type": self.keyword, "pointer": self.pointer}


#: An annotation keyword: a (sub)schema carrying it has its text appended to the messages of
#: the faults it finds, e.g. ``3 is greater than the maximum of 1 (action space Discrete(2))``.
#: Validators ignore unknown keywords, so it changes no verdict.
ERROR_LABEL = "x-error-label"


def _label_message(error: jsonschema.ValidationError) -> None:
    label = error.schema.get(ERROR_LABEL) if isinstance(error.schema, Mapping) else None
    if isinstance(label, str):
        error.message = f"{error.message} ({label})"


class _Full(Exception):
    """The rendering reached its length (:func:`_clipped_repr`)."""


def _clipped_repr(value: Any, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``repr(value)`` of a parsed JSON value, cut after ``limit`` characters ("..." then):
    the same text up to there, made without rendering the rest."""
    parts: list[str] = []
    room = limit

    def put(text: str) -> None:
        nonlocal room
        parts.append(text[: max(room, 0)])
        room -= len(text)
        if room < 0:
            raise _Full

    def render(item: Any) -> None:
        if isinstance(item, str):
            put(repr(item[: room + 1]) if len(item) > room else repr(item))
        elif isinstance(item, dict):
            put("{")
            for index, (key, member) in enumerate(dict.items(item)):
                put(", " if index else "")
                render(key)
                put(": ")
                render(member)
            put("}")
        elif isinstance(item, list):
            put("[")
            for index, member in enumerate(list.__iter__(item)):
                put(", " if index else "")
                render(member)
            put("]")
        else:
            put(repr(item))

    try:
        render(value)
    except _Full:
        return "".join(parts) + "..."
    return "".join(parts)


class _ShownObject(dict[str, Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return _clipped_repr(self)


class _ShownArray(list[Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return _clipped_repr(self)


class _ShownString(str):
    __slots__ = ()

    def __repr__(self) -> str:
        return _clipped_repr(str(self))


#: strings longer than this are quoted through :func:`_clipped_repr` in messages
_LONG_STRING = MAX_MESSAGE_CHARS


def _shown(instance: Any) -> Any:
    """``instance`` as a keyword sees it when explaining: equal to it, of a subclass of its
    type, whose ``repr`` (which the reference engine's messages quote) renders at most a
    message's length. A container is copied shallowly (its members stay themselves)."""
    if type(instance) is dict:
        return _ShownObject(instance)
    if type(instance) is list:
        return _ShownArray(instance)
    if type(instance) is str and len(instance) > _LONG_STRING:
        return _ShownString(instance)
    return instance


def _quoting_clipped(keyword: Any) -> Any:
    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        return keyword(validator, value, _shown(instance), schema)

    return check


@functools.cache
def _explaining_class(cls: Any) -> Any:
    """``cls`` whose every keyword quotes a clipped rendering of the value it checks: the
    messages are those ``cls`` makes, clipped, without rendering a large request whole (a
    batch of thousands of requests took megabytes of text, made holding the interpreter's
    lock, to be cut to one line)."""
    keywords = {name: _quoting_clipped(keyword) for name, keyword in cls.VALIDATORS.items()}
    return jsonschema.validators.extend(cls, keywords)


@functools.cache
def _reference_registry(spec: Spec) -> referencing.Registry[Any]:
    resources = [
        (uri, referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012))
        for uri, doc in spec.documents.items()
    ]
    return referencing.Registry().with_resources(resources)


@functools.cache
def _cached_rs_registry(spec: Spec) -> jsonschema_rs.Registry:
    return build_rs_registry(spec)


class Validator:
    """One schema, two engines: :meth:`is_valid` is the fast check, :meth:`faults` explains.

    The schema may ``$ref`` documents of the spec; they resolve offline from ``spec``.
    """

    __slots__ = ("schema", "_fast", "_reference")

    def __init__(self, schema: Mapping[str, Any], *, spec: Spec | None = None) -> None:
        spec = spec or load_spec()
        self.schema = schema
        base_uri = schema.get("$id") if isinstance(schema.get("$id"), str) else None
        try:
            self._fast = jsonschema_rs.validator_for(
                dict(schema), registry=_cached_rs_registry(spec), base_uri=base_uri, offline=True
            )
        except (ValueError, jsonschema_rs.ReferencingError) as exc:
            raise ValueError(f"invalid schema: {exc}") from exc
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self._reference = _explaining_class(cls)(schema, registry=_reference_registry(spec))

    def is_valid(self, instance: Any) -> bool:
        """Fast verdict (compiled engine)."""
        return self._fast.is_valid(instance)

    def reference_is_valid(self, instance: Any) -> bool:
        """Verdict of the reference engine (``jsonschema``)."""
        return bool(self._reference.is_valid(instance))

    def faults(self, instance: Any) -> list[SchemaFault]:
        """Every fault the reference engine finds, the most relevant first.

        The reference engine recurses (and quotes values with ``repr``) once per nesting
        level; a value nested nearly as deep as JSON allows can exhaust Python's stack there.
        It is then one fault at the root saying so, never an exception (``WS-ERR-9``).
        """
        try:
            errors = sorted(self._reference.iter_errors(instance), key=jsonschema.exceptions.relevance)
        except RecursionError:
            return [SchemaFault("", "depth", "the value is nested too deeply to be checked against the schema", "")]
        for error in errors:  # name what a labelled (sub)schema stands for
            _label_message(error)
        return [
            SchemaFault(
                pointer=_pointer(error.absolute_path),
                keyword=str(error.validator),
                message=clip_message(error.message),
                schema_path=_pointer(error.absolute_schema_path),
                path=tuple(error.absolute_path),
            )
            for error in errors
        ]

    def unexpected_members(self, instance: Any) -> list[str]:
        """JSON pointers of the members ``instance`` has where this schema allows no others
        (``additionalProperties: false``). With the sender view (:func:`sender_validator`) on
        a frame a receiver accepted, these are the members a receiver ignores (COMPAT-1)."""
        if self._fast.is_valid(instance):
            return []
        found: list[str] = []
        try:
            errors = list(self._reference.iter_errors(instance))
        except RecursionError:
            return []
        for error in errors:
            if error.validator != "additionalProperties" or not isinstance(error.instance, Mapping):
                continue
            schema = error.schema if isinstance(error.schema, Mapping) else {}
            named = set(schema.get("properties") or ())
            base = _pointer(error.absolute_path)
            found += [f"{base}/{_pointer([name])[1:]}" for name in error.instance if name not in named]
        return sorted(set(found))

    def check(self, instance: Any, *, what: str = "value") -> None:
        """Raise :class:`ProtocolError` (VALIDATION_ERROR) unless ``instance`` is valid.

        The message names the first fault's JSON pointer; ``errors`` lists the faults (at
        most :data:`MAX_FAULTS`, the most relevant first).
        """
        if self._fast.is_valid(instance):
            return
        faults = self.faults(instance) or [SchemaFault("", "schema", "does not match the schema", "")]
        first = faults[0]
        where = first.pointer or "/"
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR,
            clip_message(f"Invalid {what} at {where}: {first.message}"),
            pointer=first.pointer,
            keyword=first.keyword,
            errors=[fault.as_error_entry() for fault in faults[:MAX_FAULTS]],
        )


@functools.cache
def spec_validator(relative: str, spec: Spec | None = None) -> Validator:
    """The (cached) validator for one document of the spec, e.g. ``client-frame.json``."""
    spec = spec or load_spec()
    return Validator(spec.document(relative), spec=spec)


def sender_validator(relative: str) -> Validator:
    """The (cached) validator of one document in the spec's sender view (:func:`sender_view`):
    what a sender may send (COMPAT-2). Receivers use :func:`spec_validator` (COMPAT-1)."""
    return spec_validator(relative, sender_view(load_spec()))
