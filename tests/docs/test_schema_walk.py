"""The fields walk handles the schema shapes the spec may grow into, not just today's frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openenv_anyio.core import ErrorCode, load_spec
from openenv_anyio.docs import build_reference
from openenv_anyio.docs.fields import FieldRow

from .spec_copy import edit_json


def _rows(spec_root: Path, relative: str) -> dict[str, FieldRow]:
    return {row.path: row for row in build_reference(load_spec(spec_root)).frame(relative).fields}


def test_a_recursive_schema_is_shown_once_and_marked(spec_copy: Path) -> None:
    def add_tree(document: dict[str, Any]) -> None:
        document["properties"]["episode_state"]["properties"]["tree"] = {"$ref": "#/$defs/node"}
        document["$defs"]["node"] = {
            "type": "object",
            "description": "A node.",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }

    edit_json(spec_copy / "v1" / "frames" / "state-update.json", add_tree)

    rows = _rows(spec_copy, "frames/state-update.json")

    assert rows["episode_state.tree"].description == "A node."
    assert rows["episode_state.tree.children"].type == "array of object"
    assert "items: recursive" in rows["episode_state.tree.children"].constraints[-1]
    assert "episode_state.tree.children[].children" not in rows


def test_defaults_enums_unions_open_maps_and_unknown_keywords(spec_copy: Path) -> None:
    def add_members(document: dict[str, Any]) -> None:
        document["properties"]["data"]["properties"].update(
            {
                "mode": {"enum": ["fast", "slow"], "default": "fast", "description": "Speed."},
                "size": {"anyOf": [{"type": "integer"}, {"type": "string"}], "maximum": 9},
                "tags": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "odd": {"type": "string", "contentEncoding": "base64"},
            }
        )

    edit_json(spec_copy / "v1" / "frames" / "reset.json", add_members)

    rows = _rows(spec_copy, "frames/reset.json")

    assert rows["data.mode"].type == "string"
    assert rows["data.mode"].default == '"fast"'
    assert rows["data.mode"].constraints == ('one of `"fast"`, `"slow"`',)
    assert rows["data.size"].type == "integer | string"
    assert "≤ 9" in rows["data.size"].constraints
    assert rows["data.tags.*"].constraints == ("at most 3 characters",)
    assert rows["data.odd"].constraints == ('`contentEncoding`: `"base64"`',)


def test_a_ref_to_another_document_links_its_page() -> None:
    rows = {row.path: row for row in build_reference(load_spec()).frame("frames/error.json").fields}
    code = rows["data.code"]
    assert code.see == "error-codes.json"
    assert code.type == "string" and code.required
    assert code.constraints == (f"one of {len(ErrorCode)} values",)  # the registry's size
