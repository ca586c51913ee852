"""Every frame, every field and every code of every registry of the spec appears in the generated reference.

The fields are found by an independent walk over the fully dereferenced schemas (the core's
``Spec.dereferenced``), not by the generator's own walk.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from openenv_anyio.core import ENTRY_POINTS, CloseCode, ErrorCode, RpcCode, Spec, load_spec
from openenv_anyio.docs import generate

from .spec_copy import VERSION_DIR, write_example

FRAME_SCHEMAS = sorted(p.relative_to(VERSION_DIR).as_posix() for p in (VERSION_DIR / "frames").glob("*.json"))


def member_paths(schema: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of every member of a dereferenced schema (``a.b``, ``list[].c``)."""
    if not isinstance(schema, Mapping):
        return
    for name, member in (schema.get("properties") or {}).items():
        path = prefix + name
        yield path
        yield from member_paths(member, path + ".")
        if isinstance(member, Mapping) and isinstance(member.get("items"), Mapping):
            yield from member_paths(member["items"], path + "[].")


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec(VERSION_DIR.parent)


@pytest.fixture(scope="module")
def markdown(spec: Spec) -> dict[str, str]:
    return generate(spec, "markdown")


@pytest.fixture(scope="module")
def html_page(spec: Spec) -> str:
    return html.unescape(generate(spec, "html")["index.html"].replace("<wbr>", ""))


def test_the_spec_has_frames_to_document() -> None:
    assert len(FRAME_SCHEMAS) >= 8


@pytest.mark.parametrize("relative", FRAME_SCHEMAS)
def test_every_frame_has_a_page_with_every_field(
    relative: str, spec: Spec, markdown: dict[str, str], html_page: str
) -> None:
    page = markdown[relative.removesuffix(".json") + ".md"]
    schema = spec.dereferenced(relative)
    assert f"# {schema['title']}\n" in page
    assert f"`spec/v1/{relative}`" in page and f"<code>spec/v1/{relative}</code>" in html_page
    paths = list(member_paths(schema))
    assert paths, f"{relative} has no members"
    for path in paths:
        assert f"| `{path}` |" in page, f"{relative}: field {path} missing from its Markdown page"
        assert f"<code>{path}</code>" in html_page, f"{relative}: field {path} missing from the HTML page"


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_frame_type_is_listed_under_its_entry_point(
    entry: str, spec: Spec, markdown: dict[str, str], html_page: str
) -> None:
    index = markdown["README.md"]
    section = index[index.index(f'<a id="{entry}"></a>') :]
    types = spec.frame_schemas(entry)
    assert types
    for frame_type, relative in types.items():
        page = relative.removesuffix(".json") + ".md"
        assert f'| `"{frame_type}"` | [{spec.document(relative)["title"]}]({page}) |' in section
        assert f'<code>"{frame_type}"</code>' in html_page


def test_every_error_code_appears(spec: Spec, markdown: dict[str, str], html_page: str) -> None:
    codes = spec.error_codes()
    assert set(codes) == {code.value for code in ErrorCode}
    for code, meaning in codes.items():
        assert f'<a id="{code}"></a>`{code}` | {meaning} |' in markdown["error-codes.md"]
        assert f'<tr id="{code}"><td><code>{code}</code></td><td>{meaning}</td>' in html_page


def test_every_close_code_appears_with_who_sends_it_and_whether_it_resumes(
    spec: Spec, markdown: dict[str, str], html_page: str
) -> None:
    codes = spec.close_codes()
    assert set(codes) == {int(code) for code in CloseCode}
    for code, entry in codes.items():
        resumable = "yes" if entry["x-resumable"] else "no"
        row = f'<a id="close-{code}"></a>`{code}` | {entry["description"]} | {entry["x-sent-by"]} | {resumable} |'
        assert row in markdown["close-codes.md"]
        assert f'<tr id="close-{code}"><td><code>{code}</code></td><td>{entry["description"]}</td>' in html_page


def test_every_jsonrpc_error_code_appears(spec: Spec, markdown: dict[str, str], html_page: str) -> None:
    registry = spec.document("jsonrpc-error-codes.json")["anyOf"]
    assert {entry["const"] for entry in registry} == {int(code) for code in RpcCode}
    for entry in registry:
        code, meaning = entry["const"], entry["description"]
        assert f'<a id="jsonrpc{code}"></a>`{code}` | {meaning} |' in markdown["jsonrpc-error-codes.md"]
        assert f'<tr id="jsonrpc{code}"><td><code>{code}</code></td><td>{meaning}</td>' in html_page


def test_the_index_lists_every_registry(spec: Spec, markdown: dict[str, str], html_page: str) -> None:
    for relative in ("error-codes.json", "close-codes.json", "jsonrpc-error-codes.json"):
        assert f"(`spec/v1/{relative}`)" in markdown["README.md"]
        assert f'<a href="#{relative.removesuffix(".json")}">' in html_page


def test_examples_appear_on_their_frame_and_error_code(spec_copy: Path) -> None:
    write_example(
        spec_copy,
        "valid/docs-reset-seed.json",
        entry="client-frame",
        valid=True,
        requirement="WS-RESET-2",
        description="A reset with a seed.",
        source="spec",
        frame={"type": "reset", "data": {"seed": 7}},
    )
    write_example(
        spec_copy,
        "invalid/docs-reset-negative-seed.json",
        entry="client-frame",
        valid=False,
        requirement="WS-RESET-2",
        description="A negative seed.",
        source="spec",
        frame={"type": "reset", "data": {"seed": -1}},
        expect_code="VALIDATION_ERROR",
    )
    write_example(
        spec_copy,
        "invalid/docs-not-json.json",
        entry="client-frame",
        valid=False,
        requirement="WS-ERR-1",
        description="Not JSON.",
        source="spec",
        text="{not json",
        expect_code="INVALID_JSON",
    )
    write_example(
        spec_copy,
        "valid/docs-ui.json",
        entry="ui-frame",
        valid=True,
        description="One step logged.",
        frame={
            "type": "state_update",
            "episode_state": {
                "step_count": 1,
                "action_logs": [
                    {
                        "timestamp": "2026-01-01T00:00:00Z",
                        "action": {},
                        "observation": {},
                        "done": False,
                        "step_count": 1,
                    }
                ],
            },
        },
    )
    pages = generate(load_spec(spec_copy))
    reset = pages["frames/reset.md"]
    assert reset.index("### Valid") < reset.index("valid/docs-reset-seed.json") < reset.index("### Invalid")
    assert '{"type":"reset","data":{"seed":7}}' in reset
    assert "invalid/docs-reset-negative-seed.json" in reset
    assert "[`VALIDATION_ERROR`](../error-codes.md#VALIDATION_ERROR)" in reset
    assert "valid/docs-ui.json" in pages["frames/state-update.md"]
    # Not JSON at all: no frame type, so it is shown under its entry point, as raw text, after
    # the index's frame types and registries.
    index = pages["README.md"]
    rejected = index.index("### Other payloads the client frame entry point rejects")
    assert index.index("## Payloads no frame type matches") < rejected < index.index("invalid/docs-not-json.json")
    assert "```text\n  {not json\n  ```" in index
    assert re.search(r"`INVALID_JSON` \| [^|]+ \| `invalid/docs-not-json.json` \|", pages["error-codes.md"])
