"""Render the reference as one self-contained HTML page (inline CSS, no scripts, no fetches)."""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Iterable, Sequence

from .diagram import flow_svg, flow_text
from .examples import Example
from .fields import FieldRow
from .model import FramePage, Reference, Registry
from .wording import (
    FLOW_INTRO,
    FLOW_LEGEND,
    FRAME_TYPE_COLUMNS,
    INDEX_INTRO,
    INVALID_INTRO,
    REQUIRED_NOTE,
    constraints_text,
    example_caption,
    field_columns,
    frame_type_rows,
    generated_notice,
    other_members_sentence,
    replace_links,
    sent_as_sentence,
    spec_path,
)

__all__ = ["HTML_PAGE", "render_html"]

HTML_PAGE = "index.html"
_INVALID = "invalid-frames"

_CODE = re.compile(r"`([^`]+)`")
_LOCAL_LINK = re.compile(r"\[([^\]]+)\]\(#([^)]*)\)")

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa; --line: #d1d9e0;
  --accent: #0969da; --ok: #1a7f37; --bad: #cf222e; color-scheme: light dark; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --line: #3d444d;
    --accent: #4493f8; --ok: #3fb950; --bad: #f85149; } }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.5;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
code, pre { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 0.875em; }
code { background: var(--panel); border-radius: 4px; padding: 0.1em 0.3em; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.75em 1em;
  overflow-x: auto; margin: 0.25em 0 1em; } pre code { background: none; padding: 0; }
.layout { display: grid; grid-template-columns: 16rem minmax(0, 1fr); max-width: 84rem; margin: 0 auto; }
nav { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto;
  padding: 1.5rem 1rem; border-right: 1px solid var(--line); font-size: 0.9rem; }
nav h2 { font-size: 0.75rem; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted);
  margin: 1.25rem 0 0.25rem; } nav ul { list-style: none; margin: 0; padding: 0; } nav li { margin: 0.15rem 0; }
main { padding: 1.5rem 2.5rem 4rem; min-width: 0; }
h1 { font-size: 2rem; margin: 0 0 0.5rem; } h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.3rem;
  margin-top: 2.5rem; } h3 { margin-top: 1.75rem; } section.frame { scroll-margin-top: 1rem; }
.notice, .meta, .note { color: var(--muted); font-size: 0.9rem; }
.table { overflow-x: auto; margin: 0.5rem 0 0.75rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border: 1px solid var(--line); padding: 0.4rem 0.6rem; text-align: left; vertical-align: top; }
th { background: var(--panel); white-space: nowrap; }
td.path { min-width: 12rem; } td.type { white-space: nowrap; color: var(--muted); }
tr.nested td.path { padding-left: calc(0.6rem + var(--depth) * 1.1rem); }
tbody tr:nth-child(even) { background: color-mix(in srgb, var(--panel) 60%, transparent); }
.badge { display: inline-block; font-size: 0.75rem; font-weight: 600; border-radius: 2em; padding: 0 0.55em;
  margin-right: 0.4em; border: 1px solid currentColor; } .badge.valid { color: var(--ok); }
.badge.invalid { color: var(--bad); }
.flow { display: block; width: 100%; height: auto; margin: 0.5rem 0; }
.flow text { fill: var(--fg); font-size: 13px; } .flow .type { font-weight: 600; fill: var(--accent); }
.flow .event, .flow .rule { fill: var(--muted); } .flow .rule { font-family: ui-monospace, monospace; font-size: 12px; }
.flow .life { stroke: var(--line); stroke-width: 1.5; } .flow rect.party { fill: var(--panel); stroke: var(--line); }
.flow text.party { font-weight: 600; } .flow .phase rect { fill: var(--panel); } .flow .phase text { font-weight: 600; }
.flow .arrow { stroke: var(--fg); stroke-width: 1.5; } .flow .arrow.reply { stroke-dasharray: 6 4; }
.flow .head { fill: var(--fg); } .flow .arrow.event { stroke: var(--muted); } .flow .head.event { fill: var(--muted); }
.flow .note { fill: var(--panel); stroke: var(--line); stroke-dasharray: 3 3; }
details.flow-text summary { cursor: pointer; color: var(--muted); font-size: 0.9rem; }
figure { margin: 0.75rem 0; } figcaption { font-size: 0.9rem; }
@media (max-width: 60rem) { .layout { display: block; } nav { position: static; max-height: none;
  border-right: none; border-bottom: 1px solid var(--line); } main { padding: 1rem; } }
"""


def render_html(reference: Reference) -> dict[str, str]:
    """The whole reference as one page: ``{"index.html": text}``."""
    title = f"Protocol reference ({reference.version})"
    body = [
        '<div class="layout">',
        _nav(reference),
        "<main>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="notice">{_inline(generated_notice(reference.version))}</p>',
        f"<p>{_inline(INDEX_INTRO.format(version=reference.version))}</p>",
        *_flow(reference),
        *_frame_types(reference),
        *(line for frame in reference.frames for line in _frame(reference, frame)),
        *(line for registry in reference.registries for line in _registry(reference, registry)),
        *_invalid(reference),
        "</main>",
        "</div>",
    ]
    page = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
    ]
    return {HTML_PAGE: "\n".join(page) + "\n"}


def _anchor(relative: str, fragment: str | None) -> str:
    """The id of a part of the page: a fragment as is, else the schema path as a slug."""
    return fragment or posixpath.splitext(relative)[0].replace("/", "-")


def _breakable(path: str) -> str:
    """A dotted member path that may wrap after each dot (long nested paths stay readable)."""
    return html.escape(path).replace(".", ".<wbr>")


def _inline(text: str) -> str:
    """Escape text and turn the inline markup (backticks, ``ref:`` links) into HTML."""
    text = replace_links(text, lambda relative, fragment: "#" + _anchor(relative, fragment))
    text = html.escape(text, quote=False)
    text = _LOCAL_LINK.sub(lambda m: f'<a href="#{m.group(2)}">{m.group(1)}</a>', text)
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", text)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A table whose header and cells are inline markup."""
    lines = [
        '<div class="table"><table>',
        "<thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    lines += ["<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in row) + "</tr>" for row in rows]
    return [*lines, "</tbody>", "</table></div>"]


def _nav(reference: Reference) -> str:
    items = ['<nav aria-label="Contents">', "<h2>Session</h2>", "<ul>"]
    items += ['<li><a href="#message-flow">Message flow</a></li>', "</ul>", "<h2>Frame types</h2>", "<ul>"]
    items += [f'<li><a href="#{e.name}">{html.escape(e.title)}</a></li>' for e in reference.entry_points]
    items += ["</ul>", "<h2>Frames</h2>", "<ul>"]
    items += [f'<li><a href="#{_anchor(f.relative, None)}">{html.escape(f.title)}</a></li>' for f in reference.frames]
    items += ["</ul>", "<h2>Registries</h2>", "<ul>"]
    items += [
        f'<li><a href="#{_anchor(r.relative, None)}">{html.escape(r.heading)}</a></li>' for r in reference.registries
    ]
    items += ["</ul>", "<h2>Refused</h2>", "<ul>", f'<li><a href="#{_INVALID}">Invalid frames</a></li>', "</ul>"]
    items += ["</nav>"]
    return "\n".join(items)


def _flow(reference: Reference) -> list[str]:
    """The sequence diagram of a session (inline SVG), with its text form folded below it."""

    def link(frame: tuple[str, str]) -> str:
        return "#" + _anchor(reference.frame_of(*frame), None)

    text = "\n".join(flow_text(reference.flow))
    return [
        '<section id="message-flow">',
        "<h2>Message flow</h2>",
        f"<p>{_inline(FLOW_INTRO)} {_inline(FLOW_LEGEND)}</p>",
        flow_svg(reference.flow, link, "The message flow of a session"),
        '<details class="flow-text"><summary>The same diagram as text</summary>',
        f"<pre><code>{html.escape(text, quote=False)}</code></pre>",
        "</details>",
        "</section>",
    ]


def _frame_types(reference: Reference) -> list[str]:
    lines = ['<h2 id="frame-types">Frame types</h2>']
    for entry in reference.entry_points:
        lines += [f'<h3 id="{entry.name}">{html.escape(entry.title)}</h3>']
        lines += [f"<p>{_inline(f'{entry.description} Schema: `{spec_path(reference, entry.relative)}`.')}</p>"]
        lines += _table(FRAME_TYPE_COLUMNS, frame_type_rows(reference, entry))
    return lines


def _invalid(reference: Reference) -> list[str]:
    """Every invalid vector, after all the valid ones: by frame, then the payloads no frame
    type of an entry point matches."""
    lines = [f'<section id="{_INVALID}">', "<h2>Invalid frames</h2>", f"<p>{_inline(INVALID_INTRO)}</p>"]
    for frame in reference.frames:
        invalid = [e for e in frame.examples if not e.valid]
        if invalid:
            anchor = _anchor(frame.relative, None)
            title = f'<a href="#{anchor}">{html.escape(frame.title)}</a>'
            lines += [f'<h3 id="{_INVALID}-{anchor}">Invalid {title} frames</h3>']
            lines += _examples(invalid)
    for entry in reference.entry_points:
        if entry.unmatched_examples:
            heading = f"Other payloads the {html.escape(entry.title)} entry point rejects"
            lines += [f'<h3 id="{_INVALID}-{entry.name}">{heading}</h3>']
            lines += _examples(entry.unmatched_examples)
    return [*lines, "</section>"]


def _frame(reference: Reference, frame: FramePage) -> list[str]:
    lines = [f'<section class="frame" id="{_anchor(frame.relative, None)}">']
    lines += [f"<h2>{html.escape(frame.title)}</h2>", f"<p>{_inline(frame.description)}</p>"]
    meta = f"{sent_as_sentence(reference, frame)} Schema: `{spec_path(reference, frame.relative)}`."
    lines += [f'<p class="meta">{_inline(meta)}</p>', "<h3>Fields</h3>"]
    lines += _field_table(reference, frame.fields)
    note = " ".join(filter(None, (other_members_sentence(frame), REQUIRED_NOTE)))
    lines += [f'<p class="note">{_inline(note)}</p>']
    valid = [e for e in frame.examples if e.valid]
    if valid:
        lines += ["<h3>Examples</h3>"] + _examples(valid)
    invalid = len(frame.examples) - len(valid)
    if invalid:
        target = f"{_INVALID}-{_anchor(frame.relative, None)}"
        lines += [
            f'<p class="note">{invalid} invalid {html.escape(frame.title)} frame{"s" if invalid > 1 else ""}: '
            f'<a href="#{target}">under Invalid frames</a>.</p>'
        ]
    return [*lines, "</section>"]


def _field_table(reference: Reference, rows: Sequence[FieldRow]) -> list[str]:
    columns = field_columns(rows)
    lines = [
        '<div class="table"><table>',
        "<thead><tr>" + "".join(f"<th>{h}</th>" for h in columns) + "</tr></thead>",
        "<tbody>",
    ]
    for row in rows:
        default = f"`{row.default}`" if row.default is not None else ""
        default_cell = f"<td>{_inline(default) if default else ''}</td>" if "Default" in columns else ""
        nested = f' class="nested" style="--depth: {row.depth}"' if row.depth else ""
        lines.append(
            f"<tr{nested}>"
            f'<td class="path"><code>{_breakable(row.path)}</code></td>'
            f'<td class="type">{html.escape(row.type)}</td>'
            f"<td>{'yes' if row.required else 'no'}</td>"
            f"<td>{_inline(constraints_text(reference, row))}</td>"
            f"{default_cell}"
            f"<td>{_inline(row.description)}</td>"
            "</tr>"
        )
    return [*lines, "</tbody>", "</table></div>"]


def _examples(examples: Iterable[Example]) -> list[str]:
    lines: list[str] = []
    for example in examples:
        verdict = "valid" if example.valid else "invalid"
        badge = f'<span class="badge {verdict}">{verdict}</span>'
        lines += [
            "<figure>",
            f"<figcaption>{badge}{_inline(example_caption(example))}</figcaption>",
            f"<pre><code>{html.escape(example.payload, quote=False)}</code></pre>",
            "</figure>",
        ]
    return lines


def _registry(reference: Reference, registry: Registry) -> list[str]:
    lines = [f'<section id="{_anchor(registry.relative, None)}">', f"<h2>{html.escape(registry.heading)}</h2>"]
    lines += [f"<p>{_inline(registry.description)}</p>"]
    lines += [f'<p class="meta">{_inline(f"Schema: `{spec_path(reference, registry.relative)}`.")}</p>']
    header = ("Code", "Meaning", *registry.columns, *(("Examples",) if registry.has_examples else ()))
    lines += [
        '<div class="table"><table>',
        "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    for entry in registry.entries:
        cells = [f"<td>{_inline(entry.meaning)}</td>", *(f"<td>{html.escape(a)}</td>" for a in entry.annotations)]
        if registry.has_examples:
            cells.append(f"<td>{_inline(', '.join(f'`{name}`' for name in entry.examples))}</td>")
        lines.append(
            f'<tr id="{html.escape(entry.anchor)}"><td><code>{html.escape(entry.code)}</code></td>{"".join(cells)}</tr>'
        )
    return [*lines, "</tbody>", "</table></div>", "</section>"]
