"""The spec's example vectors (``spec/v1/examples/invalid/``) that a server must refuse.

Each vector file names its entry point, the requirement it shows and, for frames a server
must refuse, the error code it answers with (``expect_code``). Sans-IO: reading files only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import SPEC_VERSION
from ..core.spec import SpecError, spec_root

__all__ = ["ErrorVector", "client_error_vectors", "default_examples_dir"]


@dataclass(frozen=True, slots=True)
class ErrorVector:
    """A client frame a server answers with ``expect_code`` (and then carries on)."""

    name: str
    requirement: str
    description: str
    text: str
    expect_code: str


def default_examples_dir() -> Path | None:
    """``spec/v1/examples`` of the bundled spec, or None when the spec has no examples."""
    try:
        directory = spec_root() / SPEC_VERSION / "examples"
    except SpecError:
        return None
    return directory if directory.is_dir() else None


def _wire_text(doc: dict[str, Any]) -> str:
    return doc["text"] if "text" in doc else json.dumps(doc["frame"], ensure_ascii=False)


def client_error_vectors(directory: Path) -> list[ErrorVector]:
    """The invalid client-frame vectors of ``directory`` that carry an ``expect_code``."""
    vectors = []
    for path in sorted((directory / "invalid").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("entry") != "client-frame" or doc.get("valid") is not False or "expect_code" not in doc:
            continue
        vectors.append(
            ErrorVector(
                name=path.stem,
                requirement=str(doc.get("requirement", "")),
                description=str(doc.get("description", "")),
                text=_wire_text(doc),
                expect_code=str(doc["expect_code"]),
            )
        )
    return vectors
