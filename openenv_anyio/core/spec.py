"""The bundled protocol specification: the JSON Schema documents under ``spec/``.

Everything that needs a frame's shape reads it from here, never from code. The schemas are
found next to the installed package (``openenv_anyio/_spec``, put there by the wheel build)
or, in a source checkout, in the repository's top-level ``spec/`` directory.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jsonschema_rs

__all__ = [
    "EXTENSIBLE",
    "SPEC_VERSION",
    "BASE_URI",
    "ENTRY_POINTS",
    "Spec",
    "SpecError",
    "build_rs_registry",
    "load_spec",
    "sender_view",
    "spec_root",
]

SPEC_VERSION: Final = "v1"
BASE_URI: Final = f"https://openenv-anyio.dev/spec/{SPEC_VERSION}/"

#: Entry point name -> file, relative to the version directory.
ENTRY_POINTS: Final[Mapping[str, str]] = {
    "client-frame": "client-frame.json",
    "server-frame": "server-frame.json",
    "ui-frame": "ui-frame.json",
}


#: The annotation keyword of an open object (COMPAT-1): receivers ignore members they do not
#: know there, so its schema allows other members; senders send only the members it names
#: (COMPAT-2), which :func:`sender_view` turns into ``additionalProperties: false``.
EXTENSIBLE: Final = "x-extensible"


class SpecError(Exception):
    """The specification files are missing, unreadable or inconsistent."""


def spec_root() -> Path:
    """Return the directory that holds ``v1/`` (installed copy first, then the checkout)."""
    package_dir = Path(__file__).resolve().parent.parent
    for candidate in (package_dir / "_spec", package_dir.parent / "spec"):
        if (candidate / SPEC_VERSION).is_dir():
            return candidate
    raise SpecError(f"protocol spec not found next to {package_dir} (looked for _spec/ and ../spec/)")


@dataclass(frozen=True, eq=False)
class Spec:
    """All schema documents of one spec version, keyed by their ``$id``."""

    directory: Path
    documents: Mapping[str, Mapping[str, Any]]

    def uri(self, relative: str) -> str:
        """The ``$id`` of a document given its path relative to the version directory."""
        return BASE_URI + relative

    def document(self, relative: str) -> Mapping[str, Any]:
        """The schema document at ``relative`` (for example ``frames/step.json``)."""
        try:
            return self.documents[self.uri(relative)]
        except KeyError:
            raise SpecError(f"no schema document {relative!r} in {self.directory}") from None

    def entry_point(self, name: str) -> Mapping[str, Any]:
        """One of the three entry points: ``client-frame``, ``server-frame``, ``ui-frame``."""
        try:
            return self.document(ENTRY_POINTS[name])
        except KeyError:
            raise SpecError(f"unknown entry point {name!r}; expected one of {sorted(ENTRY_POINTS)}") from None

    def frame_schemas(self, entry: str) -> dict[str, str]:
        """Map each frame ``type`` of an entry point to the relative path of its schema.

        Read from the entry point's ``if``/``then`` dispatch, so the spec stays the only list.
        """
        result: dict[str, str] = {}
        for branch in self.entry_point(entry).get("allOf", []):
            frame_type = branch["if"]["properties"]["type"]["const"]
            result[frame_type] = branch["then"]["$ref"]
        return result

    def relative_paths(self) -> Iterator[str]:
        """Relative paths of every schema document, sorted."""
        for uri in sorted(self.documents):
            yield uri[len(BASE_URI) :]

    def error_codes(self) -> dict[str, str]:
        """The error-code registry: code -> one-line meaning."""
        registry = self.document("error-codes.json")
        return {entry["const"]: entry["description"] for entry in registry["anyOf"]}

    def close_codes(self) -> dict[int, Mapping[str, Any]]:
        """The close-code registry: code -> its entry (``description``, ``x-sent-by``,
        ``x-resumable``)."""
        registry = self.document("close-codes.json")
        return {entry["const"]: entry for entry in registry["anyOf"]}

    def dereferenced(self, relative: str) -> dict[str, Any]:
        """A copy of one document with every ``$ref`` inlined (for tools that cannot resolve)."""
        return jsonschema_rs.dereference(dict(self.document(relative)), registry=build_rs_registry(self), offline=True)


def build_rs_registry(spec: Spec) -> jsonschema_rs.Registry:
    """A ``jsonschema_rs`` registry holding every document of ``spec``."""
    return jsonschema_rs.Registry([(uri, dict(doc)) for uri, doc in spec.documents.items()])


def _read_documents(version_dir: Path) -> dict[str, Mapping[str, Any]]:
    documents: dict[str, Mapping[str, Any]] = {}
    for path in sorted(version_dir.rglob("*.json")):
        relative = path.relative_to(version_dir).as_posix()
        if relative.startswith("examples/"):
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SpecError(f"{path}: {exc}") from exc
        expected = BASE_URI + relative
        if doc.get("$id") != expected:
            raise SpecError(f"{path}: $id is {doc.get('$id')!r}, expected {expected!r}")
        documents[expected] = doc
    return documents


@functools.cache
def load_spec(root: Path | None = None) -> Spec:
    """Load (once) every schema document of the bundled spec, or of ``root`` if given."""
    directory = (root or spec_root()) / SPEC_VERSION
    return Spec(directory=directory, documents=_read_documents(directory))


def _closed(schema: Any) -> Any:
    """``schema`` with every open (``x-extensible``) object closed, recursively; a new value."""
    if isinstance(schema, Mapping):
        closed = {key: _closed(value) for key, value in schema.items()}
        if schema.get(EXTENSIBLE) is True:
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@functools.cache
def sender_view(spec: Spec) -> Spec:
    """The spec as a sender must honour it: the same documents (and ``$id``s) with every open
    object closed. A frame a sender sends validates here (COMPAT-2); a receiver validates
    against ``spec`` itself and ignores the members this view refuses (COMPAT-1)."""
    return Spec(directory=spec.directory, documents={uri: _closed(doc) for uri, doc in spec.documents.items()})
