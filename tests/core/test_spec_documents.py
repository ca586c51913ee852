"""The schema documents of spec/v1: well-formed, self-contained, consistent with the core."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urldefrag, urljoin

import jsonschema
import pytest
import referencing
import referencing.jsonschema

from openenv_anyio.core import ENTRY_POINTS, RESUMABLE_CLOSE_CODES, CloseCode, ErrorCode, SpecError, load_spec

SPEC = load_spec()
DOCUMENTS = sorted(SPEC.relative_paths())


def _refs(node: Any, base: str) -> Iterator[tuple[str, str]]:
    """(base URI, $ref) for every $ref in a schema, tracking nested $id."""
    if isinstance(node, dict):
        if isinstance(node.get("$id"), str):
            base = urljoin(base, node["$id"])
        if isinstance(node.get("$ref"), str):
            yield base, node["$ref"]
        for value in node.values():
            yield from _refs(value, base)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value, base)


def test_spec_holds_every_frame_document() -> None:
    assert "error-codes.json" in DOCUMENTS
    assert set(ENTRY_POINTS.values()) <= set(DOCUMENTS)
    assert len([d for d in DOCUMENTS if d.startswith("frames/")]) == 16


@pytest.mark.parametrize("relative", DOCUMENTS)
def test_schema_passes_the_2020_12_metaschema(relative: str) -> None:
    document = SPEC.document(relative)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)


@pytest.mark.parametrize("relative", DOCUMENTS)
def test_every_ref_resolves_offline_from_spec_alone(relative: str) -> None:
    """Each $ref resolves in a registry built from spec/ only; no retrieval is allowed."""

    def refuse(uri: str) -> referencing.Resource[Any]:
        raise referencing.exceptions.NoSuchResource(ref=uri)

    registry = referencing.Registry(retrieve=refuse).with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012))
        for uri, doc in SPEC.documents.items()
    )
    document = SPEC.document(relative)
    refs = list(_refs(document, SPEC.uri(relative)))
    for base, ref in refs:
        resolved = registry.resolver(base_uri=base).lookup(ref)
        assert isinstance(resolved.contents, dict), (relative, ref)
        target, _ = urldefrag(urljoin(base, ref))
        assert target in SPEC.documents, f"{relative}: {ref} leaves spec/"


def test_entry_points_reference_frame_documents() -> None:
    assert SPEC.frame_schemas("client-frame") == {
        "reset": "frames/reset.json",
        "step": "frames/step.json",
        "state": "frames/state.json",
        "close": "frames/close.json",
        "mcp": "frames/mcp.json",
        "validation_open": "frames/validation-open.json",
        "validation_read": "frames/validation-read.json",
    }
    assert SPEC.frame_schemas("server-frame") == {
        "observation": "frames/observation.json",
        "state": "frames/state-reply.json",
        "error": "frames/error.json",
        "session": "frames/session.json",
        "mcp": "frames/mcp-reply.json",
        "validation_open": "frames/validation-opened.json",
        "validation": "frames/validation.json",
    }
    assert SPEC.frame_schemas("ui-frame") == {
        "state_update": "frames/state-update.json",
        "session_closed": "frames/session-closed.json",
    }


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_entry_point_type_enum_matches_its_dispatch(entry: str) -> None:
    """The ``type`` enum and the if/then branches list the same frame types, each frame
    schema's ``type`` const agreeing with its branch."""
    document = SPEC.entry_point(entry)
    frame_schemas = SPEC.frame_schemas(entry)
    assert list(document["properties"]["type"]["enum"]) == list(frame_schemas)
    for frame_type, relative in frame_schemas.items():
        assert SPEC.document(relative)["properties"]["type"]["const"] == frame_type


def test_error_code_enum_equals_the_registry() -> None:
    assert [code.value for code in ErrorCode] == list(SPEC.error_codes())
    for meaning in SPEC.error_codes().values():
        assert meaning and "\n" not in meaning


def test_close_code_enum_equals_the_registry() -> None:
    registry = SPEC.close_codes()
    assert [code.value for code in CloseCode] == list(registry)
    assert {code for code, entry in registry.items() if entry["x-resumable"]} == RESUMABLE_CLOSE_CODES
    for entry in registry.values():
        assert entry["description"] and "\n" not in entry["description"]
        assert entry["x-sent-by"] in {"server", "client", "either", "none"}


def test_protocol_md_close_code_table_is_the_registry() -> None:
    """Section 7 of PROTOCOL.md lists every registered close code with its sender."""
    protocol = (SPEC.directory.parent.parent / "protocol" / "PROTOCOL.md").read_text(encoding="utf-8")
    section = protocol.split("## 7. Close codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d{4}) \| (\w+) \|", section, flags=re.M))
    assert rows == {str(code): entry["x-sent-by"] for code, entry in SPEC.close_codes().items()}


def test_every_schema_has_a_description() -> None:
    for relative in DOCUMENTS:
        assert SPEC.document(relative).get("description"), relative


def test_protocol_md_defines_every_cited_requirement() -> None:
    """Vectors cite requirement IDs; each must be defined in PROTOCOL.md."""
    from spec_vectors import load_vectors

    protocol = (SPEC.directory.parent.parent / "protocol" / "PROTOCOL.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"\*\*([A-Z]+(?:-[A-Z]+)*-\d+)\*\*", protocol))
    cited = {vector.doc["requirement"] for vector in load_vectors()}
    assert cited <= defined, cited - defined


def test_unknown_entry_point_and_document_raise_spec_error() -> None:
    with pytest.raises(SpecError):
        SPEC.entry_point("nope")
    with pytest.raises(SpecError):
        SPEC.document("frames/nope.json")


def test_load_spec_refuses_a_document_with_a_wrong_id(tmp_path: Any) -> None:
    version = tmp_path / "v1"
    version.mkdir()
    (version / "x.json").write_text('{"$id": "https://example.com/x.json"}')
    with pytest.raises(SpecError, match=r"\$id"):
        load_spec(tmp_path)


def test_dereferenced_entry_point_has_no_refs_left() -> None:
    for relative in ENTRY_POINTS.values():
        document = SPEC.dereferenced(relative)
        assert not list(_refs(document, SPEC.uri(relative)))
