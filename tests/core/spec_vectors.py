"""The test vectors of ``spec/v1/examples/``: one JSON file per frame, valid or invalid."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_anyio.core import ENTRY_POINTS, load_spec

VECTOR_KEYS = {"entry", "valid", "requirement", "description", "source"}
SOURCES = {"openenv-core-0.3.0", "openenv-0.10.0", "spec"}


@dataclass(frozen=True)
class Vector:
    """One example frame and what the spec says about it."""

    path: Path
    doc: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"

    @property
    def entry(self) -> str:
        return self.doc["entry"]

    @property
    def valid(self) -> bool:
        return self.doc["valid"]

    @property
    def is_text(self) -> bool:
        return "text" in self.doc

    @property
    def frame(self) -> Any:
        return self.doc["frame"]

    @property
    def unknown_members(self) -> list[str]:
        """JSON pointers of members a receiver ignores and a sender must not send (COMPAT-1, -2)."""
        return list(self.doc.get("unknown_members", []))

    @property
    def wire_text(self) -> str:
        """What travels in the text frame: ``text`` as is, or ``frame`` serialised."""
        return self.doc["text"] if self.is_text else json.dumps(self.doc["frame"], ensure_ascii=False)


def examples_dir() -> Path:
    return load_spec().directory / "examples"


def load_vectors() -> list[Vector]:
    """Every vector file, sorted by path."""
    return [
        Vector(path, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(examples_dir().glob("*/*.json"))
    ]


def check_vector_format(vector: Vector) -> None:
    """Assert the file follows the vector format of the spec's examples."""
    doc = vector.doc
    assert doc.keys() >= VECTOR_KEYS, f"missing keys: {VECTOR_KEYS - doc.keys()}"
    assert doc["entry"] in ENTRY_POINTS
    assert doc["source"] in SOURCES
    assert isinstance(doc["valid"], bool) and isinstance(doc["description"], str)
    assert ("frame" in doc) != ("text" in doc), "exactly one of frame and text"
    assert vector.path.parent.name == ("valid" if doc["valid"] else "invalid")
    extra = doc.keys() - VECTOR_KEYS - {"frame", "text", "expect_code", "unknown_members"}
    assert not extra, f"unknown keys: {extra}"
    if doc["valid"]:
        assert "expect_code" not in doc and "frame" in doc
    else:
        assert "unknown_members" not in doc, "unknown members are ignored by receivers: such a frame is valid"
        assert doc["expect_code"] in load_spec().error_codes()
    unknown = doc.get("unknown_members", [])
    assert isinstance(unknown, list) and all(isinstance(p, str) and p.startswith("/") for p in unknown)
