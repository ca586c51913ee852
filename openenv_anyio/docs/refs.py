"""Resolve the ``$ref``s of the spec's schema documents, offline and against the spec alone.

A reference is resolved against the ``$id`` of the document it appears in (every document's
``$id`` mirrors its path, so file-relative and ``$id``-relative refs agree). Any ``$ref``
that leads nowhere is an :class:`UnresolvableRefError` naming the file and the JSON pointer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

from openenv_anyio.core.spec import BASE_URI, Spec

from .errors import UnresolvableRefError

__all__ = ["RefResolver", "display_path", "pointer_of"]

#: Keywords whose values are data, not schemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
#: Keywords whose values map names to schemas (so their keys are names, not keywords).
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def pointer_of(parts: tuple[str, ...]) -> str:
    """JSON pointer text for a path of object keys / array indices."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts) or "/"


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


class RefResolver:
    """Follows ``$ref``s between the documents of one :class:`Spec`."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec

    def relative(self, uri: str) -> str:
        """The path relative to the version directory of a document URI of the spec."""
        return uri[len(BASE_URI) :] if uri.startswith(BASE_URI) else uri

    def file_of(self, uri: str) -> str:
        """How error messages name the document with this URI."""
        return display_path(self.spec.directory / self.relative(uri))

    def resolve(self, ref: str, base_uri: str, *, where: tuple[str, ...] = ()) -> tuple[Any, str]:
        """The schema ``ref`` points at, and the URI of the document that holds it.

        ``base_uri`` is the URI of the document the ``$ref`` appears in, ``where`` the path of
        the ``$ref`` inside it (for the error message).
        """
        target_uri, _, fragment = urljoin(base_uri, ref).partition("#")
        document = self.spec.documents.get(target_uri)
        if document is None:
            raise UnresolvableRefError(
                f"{self.file_of(base_uri)}: unresolvable $ref {ref!r} at {pointer_of(where)}: "
                f"no schema document {self.relative(target_uri)!r} in the spec"
            )
        node: Any = document
        for raw in fragment.split("/")[1:] if fragment else ():
            key = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise UnresolvableRefError(
                    f"{self.file_of(base_uri)}: unresolvable $ref {ref!r} at {pointer_of(where)}: "
                    f"{self.relative(target_uri)!r} has nothing at #{fragment}"
                )
        return node, target_uri

    def check_all(self) -> None:
        """Resolve every ``$ref`` of every document; raise on the first that leads nowhere."""
        for uri in sorted(self.spec.documents):
            for where, ref in _refs_in(self.spec.documents[uri], ()):
                self.resolve(ref, uri, where=where)


def _refs_in(node: Any, where: tuple[str, ...], *, names: bool = False) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every ``$ref`` below ``node`` (a schema, or a name -> schema map when ``names``)."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if not names and isinstance(ref, str):
            yield (*where, "$ref"), ref
        for key, value in node.items():
            if names or key not in _DATA_KEYWORDS:
                child_names = not names and key in _NAME_MAPS
                yield from _refs_in(value, (*where, str(key)), names=child_names)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _refs_in(value, (*where, str(index)))
