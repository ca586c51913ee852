"""Hypothesis strategies for the spec's entry points, built by hypothesis-jsonschema.

hypothesis-jsonschema (0.23.1, its latest release) drives Hypothesis' private collection
helper ``many`` through the old ``while elements.more(): ... elements.reject()`` protocol;
Hypothesis 6.170 replaced it with a context manager that is iterated. When the installed
Hypothesis lacks ``more()``, :func:`_adapt_many` gives hypothesis-jsonschema an object with
the old protocol on top of the new one. Nothing is patched when the old API exists.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
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


def entry_schema(entry: str) -> dict[str, Any]:
    """The entry point's schema with every ``$ref`` inlined (hypothesis-jsonschema resolves none)."""
    return load_spec().dereferenced(ENTRY_POINTS[entry])


def valid_frames(entry: str) -> st.SearchStrategy[dict[str, Any]]:
    """Frames that the entry point's schema accepts."""
    return from_schema(entry_schema(entry))
