"""Hypothesis strategies for the spec's frames: valid frames and mutations of them.

Two generators of valid frames:

- :func:`valid_frames` compiles each frame schema of an entry point into a strategy once
  (a small compiler for the keywords the spec uses; an unknown keyword fails loudly so a
  spec change cannot silently narrow the test). Fast enough for thousands of frames.
- :func:`jsonschema_frames` is hypothesis-jsonschema on the entry point itself (``$ref``
  inlined by ``Spec.dereferenced``, ``if``/``then`` dispatch included): an independent
  generator, slower, used for a smaller sample.

hypothesis-jsonschema 0.23.1 (its latest release) drives Hypothesis' private collection
helper ``many`` through the old ``more()``/``reject()`` protocol, which Hypothesis 6.170
replaced with an iterated context manager. When ``more`` is missing, :func:`_adapt_many`
gives hypothesis-jsonschema an object with the old protocol on top of the new one.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

import hypothesis.internal.conjecture.utils as conjecture_utils
import hypothesis_jsonschema._from_schema as from_schema_module
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from openenv_anyio.core import ENTRY_POINTS, load_spec


class _OldStyleMany:
    """``more()``/``reject()`` over the iterated ``many`` of newer Hypothesis."""

    def __init__(self, data: Any, **kwargs: Any) -> None:
        self._many = conjecture_utils.many(data, **kwargs)
        self._many.__enter__()
        self._steps: Iterator[None] = iter(self._many)
        self._open = True

    def more(self) -> bool:
        if not self._open:
            return False
        try:
            next(self._steps)
        except StopIteration:
            self._open = False
            self._many.__exit__(None, None, None)
            return False
        return True

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


def _adapt_many() -> None:
    if hasattr(conjecture_utils.many, "more"):
        return
    shim = types.SimpleNamespace(**vars(conjecture_utils))
    shim.many = _OldStyleMany
    from_schema_module.cu = shim  # type: ignore[attr-defined]


_adapt_many()

# ---------------------------------------------------------------------------------------
# JSON values
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
#: Any JSON value (small), for members the schema leaves open.
json_values = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)

_ANNOTATIONS = {
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "default",
    "x-extensible",
}  # x-extensible: COMPAT-1, no effect on validity
_KNOWN = _ANNOTATIONS | {
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "minimum",
    "maxLength",
    "items",
    "anyOf",
}


def _integers(minimum: Any) -> st.SearchStrategy[Any]:
    exact = st.integers(min_value=minimum)
    # JSON Schema counts 3.0 as an integer; and integers beyond 64 bits are still integers.
    return st.one_of(
        exact,
        exact.filter(lambda n: abs(n) < 2**53).map(float),
        st.integers(min_value=max(minimum or 0, 2**64), max_value=2**80),
    )


def _strings(max_length: int | None) -> st.SearchStrategy[str]:
    if max_length is None:
        return st.text(max_size=12)
    at_limit = st.sampled_from(["e", "\U0001f600", "é"]).map(lambda ch: ch * max_length)
    return st.one_of(st.text(max_size=12), at_limit)


def _for_type(name: str, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if name == "object":
        return _objects(schema)
    if name == "array":
        items = compile_schema(schema["items"]) if "items" in schema else json_values
        return st.lists(items, max_size=3)
    if name == "integer":
        return _integers(schema.get("minimum"))
    if name == "number":
        low = schema.get("minimum")
        return _integers(low) | st.floats(min_value=low, allow_nan=False, allow_infinity=False)
    if name == "string":
        return _strings(schema.get("maxLength"))
    if name == "boolean":
        return st.booleans()
    if name == "null":
        return st.none()
    raise ValueError(f"unsupported type {name!r}")


def _objects(schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    if not properties and schema.get("additionalProperties", True) is True:
        return json_objects
    members = {key: compile_schema(sub) for key, sub in properties.items()}
    extra_allowed = schema.get("additionalProperties", True) is True

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out = {key: draw(members[key]) for key in properties if key in required or draw(st.booleans())}
        if extra_allowed:
            for key, value in draw(json_objects).items():
                out.setdefault(key, value)
        return out

    return build()


def compile_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """A strategy for values valid under ``schema`` (dereferenced, keywords of the spec only)."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"schema keywords not supported by the generator: {sorted(unknown)}")
    if "anyOf" in schema:
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        return st.one_of([compile_schema({**rest, **branch}) for branch in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema.get("type")
    if kinds is None:
        return json_values
    if isinstance(kinds, str):
        return _for_type(kinds, schema)
    return st.one_of([_for_type(kind, schema) for kind in kinds])


def frame_schemas(entry: str) -> dict[str, dict[str, Any]]:
    """Frame type -> its schema with ``$ref`` inlined, for the frame types of ``entry``."""
    spec = load_spec()
    return {frame_type: spec.dereferenced(rel) for frame_type, rel in spec.frame_schemas(entry).items()}


def valid_frames(entry: str) -> st.SearchStrategy[dict[str, Any]]:
    """Frames valid under ``entry``: one compiled strategy per frame type of its dispatch."""
    return st.one_of([compile_schema(schema) for schema in frame_schemas(entry).values()])


def jsonschema_frames(entry: str) -> st.SearchStrategy[dict[str, Any]]:
    """hypothesis-jsonschema on the whole entry point (dispatch by ``if``/``then``)."""
    return from_schema(load_spec().dereferenced(ENTRY_POINTS[entry]))


# ---------------------------------------------------------------------------------------
# Mutations
_ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1.0,
    -0.0,
    2**64,
    -(2**70),
    1e300,
    -1e-300,
    "",
    "1",
    "e" * 256,
    "\U0001f600" * 256,
    [],
    [1],
    {},
    {"a": 1},
    "reset",
    "VALIDATION_ERROR",
)
_KEYS = (
    "type",
    "data",
    "action",
    "seed",
    "episode_id",
    "step_count",
    "reward",
    "done",
    "observation",
    "message",
    "code",
    "errors",
    "episode_state",
    "action_logs",
    "extra",
    "",
)
_TYPES = (
    "reset",
    "step",
    "state",
    "close",
    "observation",
    "error",
    "state_update",
    "bogus",
    "",
    "STEP",
    None,
    1,
    ["step"],
)


def _containers(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, (dict, list)):
        yield path, value
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            yield from _containers(child, (*path, key))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_copy(child) for child in value]
    return value


def _schema_paths(
    schema: Mapping[str, Any], path: tuple[Any, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """(path, subschema) for every member the schema declares, array items as index 0."""
    for key, sub in schema.get("properties", {}).items():
        yield (*path, key), sub
        yield from _schema_paths(sub, (*path, key))
    if isinstance(schema.get("items"), Mapping):
        yield (*path, 0), schema["items"]
        yield from _schema_paths(schema["items"], (*path, 0))


def boundary_values(schema: Mapping[str, Any]) -> list[Any]:
    """Values on and just beyond the constraints of ``schema``."""
    boundary: list[Any] = []
    if "minimum" in schema:
        low = schema["minimum"]
        boundary += [low - 1, low - 0.5, low, float(low), low + 0.5, -(2**64), 2**64]
    if "maxLength" in schema:
        n = schema["maxLength"]
        boundary += ["e" * n, "e" * (n + 1), "\U0001f600" * n, "\U0001f600" * (n + 1)]
    for branch in [schema, *schema.get("anyOf", ())]:
        if "const" in branch:
            boundary += [branch["const"], f"{branch['const']}x", str(branch["const"]).lower()]
    boundary += list(schema.get("enum", ()))
    return boundary


#: One value of every JSON type (and an integral float), for type confusion.
EVERY_TYPE: tuple[Any, ...] = (None, True, 0, 1.0, 1.5, "s", [], [1], {}, {"k": 1})


def _near_misses(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Boundary values of ``schema`` half the time (when it has any), else any type."""
    boundary = boundary_values(schema)
    any_type = st.sampled_from([*EVERY_TYPE, *boundary])
    return st.sampled_from(boundary) | any_type if boundary else any_type


def full_example(schema: Mapping[str, Any]) -> Any:
    """A valid value of ``schema`` with every declared member present (one array item)."""
    if "anyOf" in schema:
        return full_example({**{k: v for k, v in schema.items() if k != "anyOf"}, **schema["anyOf"][0]})
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kinds = schema.get("type", "null")
    kind = kinds if isinstance(kinds, str) else kinds[0]
    if kind == "object":
        return {key: full_example(sub) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [full_example(schema["items"])] if "items" in schema else []
    return {
        "integer": schema.get("minimum", 0),
        "number": schema.get("minimum", 0),
        "string": "s",
        "boolean": False,
        "null": None,
    }[kind]


def boundary_sweep(schema: Mapping[str, Any]) -> Iterator[Any]:
    """Every near miss of a frame schema, deterministically: for each declared member of a
    full example, each boundary value and each JSON type in its place, and each required
    member dropped."""
    base = full_example(schema)
    yield base
    for path, sub in [((), schema), *_schema_paths(schema)]:
        if path:
            for value in [*boundary_values(sub), *EVERY_TYPE]:
                frame = _copy(base)
                _parent(frame, path)[path[-1]] = value
                yield frame
        for key in sub.get("required", ()):
            frame = _copy(base)
            node = _parent(frame, (*path, None))
            del node[key]
            yield frame


def _parent(frame: Any, path: tuple[Any, ...]) -> Any:
    """The container at ``path[:-1]`` in ``frame``, or None where the frame has none."""
    node = frame
    for key in path[:-1]:
        in_dict = isinstance(node, dict) and key in node
        in_list = isinstance(node, list) and isinstance(key, int) and key < len(node)
        if not (in_dict or in_list):
            return None
        node = node[key]
    return node if isinstance(node, (dict, list)) else None


@st.composite
def mutated(draw: st.DrawFn, frame: dict[str, Any], schema: Mapping[str, Any] | None = None) -> Any:
    """``frame`` with one change: a key dropped or added, a value of another type or out of
    range, a wrong ``type``, or a non-object in place of the frame. Given the frame's
    schema, most changes aim at what it declares: boundary values of its constraints and
    its required members."""
    frame = _copy(frame)
    kinds = ["drop", "add", "replace", "number", "type", "non-object"]
    targets = [(path, sub) for path, sub in _schema_paths(schema) if _parent(frame, path) is not None] if schema else []
    targets += [(path, sub) for path, sub in targets if boundary_values(sub)]  # constrained ones twice
    if targets:
        kinds += ["near-miss"] * 6 + ["drop-required"] * 2
    kind = draw(st.sampled_from(kinds))
    if kind == "near-miss":
        path, sub = draw(st.sampled_from(targets))
        parent = _parent(frame, path)
        value = draw(_near_misses(sub))
        if isinstance(parent, list):
            parent.append(value) if not parent else parent.__setitem__(0, value)
        else:
            parent[path[-1]] = value
        return frame
    if kind == "drop-required":
        path, sub = draw(st.sampled_from(targets))
        node = _parent(frame, (*path, None))
        required = [key for key in sub.get("required", ()) if isinstance(node, dict) and key in node]
        if required:
            del node[draw(st.sampled_from(required))]  # type: ignore[union-attr]
            return frame
        kind = "drop"
    if kind == "non-object":
        return draw(st.sampled_from([[frame], "frame", 0, None, True, []]))
    if kind == "type":
        frame["type"] = draw(st.sampled_from(_TYPES))
        return frame
    containers = list(_containers(frame))
    _, container = draw(st.sampled_from(containers))
    keys = list(container) if isinstance(container, dict) else list(range(len(container)))
    if kind == "add" or not keys:
        if isinstance(container, dict):
            container[draw(st.sampled_from(_KEYS) | st.text(max_size=4))] = draw(
                st.sampled_from(_ODD_VALUES) | json_values
            )
        else:
            container.append(draw(st.sampled_from(_ODD_VALUES)))
        return frame
    key = draw(st.sampled_from(keys))
    if kind == "drop":
        del container[key]
    elif kind == "number" and isinstance(container[key], (int, float)) and not isinstance(container[key], bool):
        old = container[key]
        container[key] = draw(st.sampled_from([-1, -old - 1, old + 0.5, float(old), 2**64 + abs(int(old))]))
    else:
        container[key] = draw(st.sampled_from(_ODD_VALUES))
    return frame
