"""Helpers of the reference-generator tests: where the spec is, and how to edit a copy of it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SPEC_ROOT = REPO / "spec"
VERSION_DIR = SPEC_ROOT / "v1"
REFERENCE_DIR = REPO / "protocol" / "reference"


@dataclass(frozen=True)
class DocsRun:
    """What one ``openenv-anyio docs`` invocation returned and printed."""

    code: int
    out: str
    err: str


def write_example(spec_root: Path, name: str, **vector: Any) -> Path:
    """Write one example vector ``examples/NAME`` into the spec copy at ``spec_root``."""
    path = spec_root / "v1" / "examples" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(vector, indent=2), encoding="utf-8")
    return path


def edit_json(path: Path, edit: Callable[[Any], None]) -> None:
    """Load the JSON file at ``path``, let ``edit`` change it in place, write it back."""
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory``: relative path -> bytes."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
