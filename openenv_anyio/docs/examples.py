"""Load the example vectors of ``spec/<version>/examples/`` and prove each against its schema.

A vector is one JSON file (see the spec's examples README / the contract): ``entry`` names the
entry point, ``valid`` the verdict it must get, ``frame`` the JSON value (or ``text`` a raw
payload that is not JSON). Generation stops at the first vector whose verdict disagrees
with the entry point's schema, with a one-line :class:`BrokenExampleError` naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_anyio.core import ENTRY_POINTS, ProtocolError, Spec, parse_json, spec_validator

from .errors import BrokenExampleError
from .refs import display_path

__all__ = ["Example", "load_examples"]

_WIDTH = 72  # frames whose compact JSON fits are shown on one line


@dataclass(frozen=True, slots=True)
class Example:
    """One checked example vector, ready to render."""

    name: str  # path relative to the examples directory, e.g. "valid/reset-seed.json"
    entry: str
    valid: bool
    requirement: str | None
    description: str
    source: str | None
    payload: str  # the frame as JSON text, or the raw text payload
    raw_text: bool
    expect_code: str | None
    frame_type: str | None  # the value's "type" when it is a string


def load_examples(spec: Spec) -> list[Example]:
    """Every example of ``spec``, sorted by path, each checked against its entry point."""
    directory = spec.directory / "examples"
    if not directory.is_dir():
        return []
    codes = spec.error_codes()
    return [
        _load(path, path.relative_to(directory).as_posix(), spec, codes) for path in sorted(directory.rglob("*.json"))
    ]


def _fail(path: Path, why: str) -> BrokenExampleError:
    return BrokenExampleError(f"{display_path(path)}: {why}")


def _load(path: Path, name: str, spec: Spec, codes: Mapping[str, str]) -> Example:
    try:
        vector = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _fail(path, f"not a readable JSON file ({' '.join(str(exc).split())})") from None
    if not isinstance(vector, dict):
        raise _fail(path, "an example vector must be a JSON object")
    entry = vector.get("entry")
    if not isinstance(entry, str) or entry not in ENTRY_POINTS:
        raise _fail(path, f"entry is {entry!r}, expected one of {sorted(ENTRY_POINTS)}")
    valid = vector.get("valid")
    if not isinstance(valid, bool):
        raise _fail(path, "valid must be true or false")
    folder = name.split("/", 1)[0]
    if folder in ("valid", "invalid") and (folder == "valid") != valid:
        raise _fail(path, f"valid is {str(valid).lower()} but the file is in {folder}/")
    if ("frame" in vector) == ("text" in vector):
        raise _fail(path, "give exactly one of frame (a JSON value) or text (a raw payload)")
    description = vector.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _fail(path, "description must be a non-empty string")
    expect_code = vector.get("expect_code")
    if expect_code is not None and expect_code not in codes:
        raise _fail(path, f"expect_code {expect_code!r} is not in the error-code registry")
    raw_text = "text" in vector
    if raw_text and not isinstance(vector["text"], str):
        raise _fail(path, "text must be a string")
    value, verdict, why = _verdict(vector, entry, spec)
    if verdict != valid:
        expected = "valid" if valid else "invalid"
        raise _fail(path, f"marked {expected} but {ENTRY_POINTS[entry]} says otherwise: {why}")
    frame_type = value.get("type") if isinstance(value, dict) else None
    return Example(
        name=name,
        entry=entry,
        valid=valid,
        requirement=_optional_text(vector, "requirement", path),
        description=" ".join(description.split()),
        source=_optional_text(vector, "source", path),
        payload=vector["text"] if raw_text else _frame_text(vector["frame"]),
        raw_text=raw_text,
        expect_code=expect_code,
        frame_type=frame_type if isinstance(frame_type, str) else None,
    )


def _verdict(vector: Mapping[str, Any], entry: str, spec: Spec) -> tuple[Any, bool, str]:
    """The parsed value, whether the entry point accepts it, and why not (one line)."""
    if "text" in vector:
        try:
            value = parse_json(vector["text"])
        except ProtocolError as exc:
            return None, False, exc.message
    else:
        value = vector["frame"]
    validator = spec_validator(ENTRY_POINTS[entry], spec)
    if validator.is_valid(value):
        return value, True, "the value matches the schema"
    faults = validator.faults(value)
    why = f"{faults[0].pointer or '/'}: {faults[0].message}" if faults else "does not match the schema"
    return value, False, why


def _optional_text(vector: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = vector.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(path, f"{key} must be a string")
    return value


def _frame_text(frame: Any) -> str:
    compact = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    if len(compact) <= _WIDTH:
        return compact
    return json.dumps(frame, ensure_ascii=False, indent=2)
