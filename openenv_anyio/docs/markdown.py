"""Render the reference as Markdown pages: an index, one page per frame, one per code registry."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from .diagram import flow_text
from .examples import Example
from .fields import FieldRow
from .model import FramePage, Reference, Registry
from .wording import (
    FLOW_INTRO,
    FRAME_TYPE_COLUMNS,
    INDEX_INTRO,
    REQUIRED_NOTE,
    UNMATCHED_INTRO,
    constraints_text,
    example_caption,
    field_columns,
    frame_type_rows,
    generated_notice,
    other_members_sentence,
    replace_links,
    schema_link,
    sent_as_sentence,
    spec_path,
)

__all__ = ["INDEX_PAGE", "render_markdown"]

INDEX_PAGE = "README.md"


def render_markdown(reference: Reference) -> dict[str, str]:
    """Every page of the reference: relative output path -> Markdown text."""
    pages = {INDEX_PAGE: _index(reference)}
    for registry in reference.registries:
        pages[_page_of(registry.relative)] = _registry(reference, registry)
    for frame in reference.frames:
        pages[_page_of(frame.relative)] = _frame(reference, frame)
    return {path: _finish(path, text) for path, text in sorted(pages.items())}


def _page_of(relative: str) -> str:
    return INDEX_PAGE if not relative else posixpath.splitext(relative)[0] + ".md"


def _finish(page: str, text: str) -> str:
    """Turn ``ref:`` links into paths relative to ``page``; one trailing newline."""
    here = posixpath.dirname(page) or "."

    def target(relative: str, fragment: str | None) -> str:
        path = posixpath.relpath(_page_of(relative), here)
        if path == posixpath.basename(page) and fragment:
            return f"#{fragment}"
        return path + (f"#{fragment}" if fragment else "")

    return replace_links(text, target).rstrip("\n") + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _notice(reference: Reference) -> list[str]:
    return [f"<!-- {generated_notice(reference.version)} -->", ""]


def _index(reference: Reference) -> str:
    lines = _notice(reference)
    lines += [f"# Protocol reference ({reference.version})", "", INDEX_INTRO.format(version=reference.version), ""]
    lines += ["## Message flow", "", FLOW_INTRO, "", "```text", *flow_text(reference.flow), "```", ""]
    lines += ["## Frame types", ""]
    for entry in reference.entry_points:
        lines += [f'<a id="{entry.name}"></a>', "", f"### {entry.title}", ""]
        lines += [f"{entry.description} Schema: `{spec_path(reference, entry.relative)}`.", ""]
        lines += _table(FRAME_TYPE_COLUMNS, frame_type_rows(reference, entry))
        lines.append("")
    lines += ["## Frames", ""]
    lines += [
        f"- {schema_link(reference, f.relative)} (`{spec_path(reference, f.relative)}`)"
        for f in reference.frames
        if not f.is_http
    ]
    lines += ["", "## HTTP answers", ""]
    lines += [
        f"- {schema_link(reference, f.relative)} (`{spec_path(reference, f.relative)}`)"
        for f in reference.frames
        if f.is_http
    ]
    lines += ["", "## Registries", ""]
    lines += [
        f"- {schema_link(reference, r.relative)} (`{spec_path(reference, r.relative)}`): {len(r.entries)} codes"
        for r in reference.registries
    ]
    unmatched = [entry for entry in reference.entry_points if entry.unmatched_examples]
    if unmatched:
        lines += ["", "## Payloads no frame type matches", "", UNMATCHED_INTRO, ""]
    for entry in unmatched:
        lines += [f"### Other payloads the {entry.title} entry point rejects", ""]
        lines += _examples(entry.unmatched_examples)
    return "\n".join(lines)


def _frame(reference: Reference, frame: FramePage) -> str:
    lines = _notice(reference)
    lines += [f"# {frame.title}", "", frame.description, ""]
    lines += [f"{sent_as_sentence(reference, frame)} Schema: `{spec_path(reference, frame.relative)}`.", ""]
    lines += ["## Fields", ""]
    columns = field_columns(frame.fields)
    lines += _table(columns, (_field_cells(reference, row, "Default" in columns) for row in frame.fields))
    lines += ["", " ".join(filter(None, (other_members_sentence(frame), REQUIRED_NOTE))), ""]
    valid = [e for e in frame.examples if e.valid]
    invalid = [e for e in frame.examples if not e.valid]
    if valid or invalid:
        lines += ["## Examples", ""]
    if valid:
        lines += ["### Valid", ""] + _examples(valid)
    if invalid:
        lines += ["### Invalid", ""] + _examples(invalid)
    return "\n".join(lines)


def _field_cells(reference: Reference, row: FieldRow, with_default: bool) -> tuple[str, ...]:
    default = (f"`{row.default}`" if row.default is not None else "",) if with_default else ()
    return (
        f"`{row.path}`",
        row.type,
        "yes" if row.required else "no",
        constraints_text(reference, row),
        *default,
        row.description,
    )


def _examples(examples: Iterable[Example]) -> list[str]:
    lines: list[str] = []
    for example in examples:
        fence = "text" if example.raw_text else "json"
        lines += [f"- {example_caption(example)}", "", f"  ```{fence}"]
        lines += [f"  {line}" if line else "" for line in example.payload.splitlines() or [""]]
        lines += ["  ```", ""]
    return lines


def _registry(reference: Reference, registry: Registry) -> str:
    lines = _notice(reference)
    lines += [f"# {registry.heading}", "", registry.description, ""]
    lines += [f"Schema: `{spec_path(reference, registry.relative)}`.", ""]
    examples = ("Examples",) if registry.has_examples else ()
    lines += _table(
        ("Code", "Meaning", *registry.columns, *examples),
        (
            (
                f'<a id="{entry.anchor}"></a>`{entry.code}`',
                entry.meaning,
                *entry.annotations,
                *((", ".join(f"`{name}`" for name in entry.examples),) if examples else ()),
            )
            for entry in registry.entries
        ),
    )
    return "\n".join(lines)
