"""The reference opens with the message flow of a session, then valid frames, then invalid ones.

The frame types are read from the spec's dispatch (``Spec.frame_schemas``), not from the
generator's flow, so a frame type the diagram leaves out is found here as well as by the
generator's own check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openenv_anyio.core import ENTRY_POINTS, Spec, load_spec
from openenv_anyio.docs import generate

from .conftest import RunDocs
from .spec_copy import VERSION_DIR, edit_json


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec(VERSION_DIR.parent)


@pytest.fixture(scope="module")
def page(spec: Spec) -> str:
    return generate(spec, "html")["index.html"]


@pytest.fixture(scope="module")
def index(spec: Spec) -> str:
    return generate(spec, "markdown")["README.md"]


def spec_frame_types(spec: Spec) -> list[tuple[str, str, str]]:
    """(entry point, frame type, schema path) of every frame type the spec dispatches."""
    return [(entry, t, relative) for entry in ENTRY_POINTS for t, relative in spec.frame_schemas(entry).items()]


def diagram(page: str) -> str:
    start = page.index('<svg class="flow"')
    return page[start : page.index("</svg>", start)]


def test_the_page_opens_with_the_diagram_then_valid_then_invalid_examples(page: str) -> None:
    diagram_at = page.index('<svg class="flow"')
    valid = [m.start() for m in re.finditer(r'<span class="badge valid">', page)]
    invalid = [m.start() for m in re.finditer(r'<span class="badge invalid">', page)]
    assert valid and invalid
    assert diagram_at < page.index('<h2 id="frame-types">') < valid[0]
    assert max(valid) < min(invalid), "an invalid vector comes before a valid one"
    assert page.index("<h2>Invalid frames</h2>") < min(invalid)


def test_every_frame_type_of_the_spec_is_an_arrow_of_the_diagram(spec: Spec, page: str) -> None:
    svg = diagram(page)
    types = spec_frame_types(spec)
    assert len(types) >= 12
    for entry, frame_type, relative in types:
        anchor = relative.removesuffix(".json").replace("/", "-")
        link = f'<a href="#{anchor}"><tspan class="type">{frame_type}</tspan></a>'
        assert link in svg, f"{entry} type {frame_type!r} is not in the diagram"
        assert f'id="{anchor}"' in page  # the arrow leads to the frame's section


def test_the_markdown_index_opens_with_the_diagram_as_text(spec: Spec, index: str) -> None:
    start = index.index("## Message flow")
    text = index[index.index("```text", start) : index.index("```\n", index.index("```text", start) + 7)]
    assert start < index.index("## Frame types") < index.index("## Payloads no frame type matches")
    for party in ("Agent (/ws)", "Server", "Dashboard (/ws/ui)"):
        assert party in text.splitlines()[1]
    for entry, frame_type, _ in spec_frame_types(spec):
        assert re.search(rf"(-- |<-- ){re.escape(frame_type)}(:| -)", text), f"{entry} type {frame_type!r} not drawn"


def test_a_frame_page_shows_valid_examples_before_invalid_ones(spec: Spec) -> None:
    pages = generate(spec, "markdown")
    both = [p for p in pages.values() if "### Valid" in p and "### Invalid" in p]
    assert both
    for text in both:
        assert text.index("### Valid") < text.index("### Invalid")


def test_a_frame_type_missing_from_the_flow_stops_generation(spec_copy: Path, run_docs: RunDocs) -> None:
    def add_ping(document: dict[str, object]) -> None:
        document["properties"]["type"]["enum"].append("ping")  # type: ignore[index]
        branch = {"if": {"required": ["type"], "properties": {"type": {"const": "ping"}}}}
        document["allOf"].append({**branch, "then": {"$ref": "frames/close.json"}})  # type: ignore[attr-defined]

    edit_json(spec_copy / "v1" / "client-frame.json", add_ping)
    result = run_docs("--check", "--spec-root", spec_copy)
    assert result.code == 1
    assert "client-frame type 'ping' is missing from the message flow" in result.err
    assert len(result.err.strip().splitlines()) == 1
