"""Lay the message flow out as a sequence diagram: inline SVG for the HTML page, monospace
text for Markdown (and as the SVG's text equivalent). Both come from the same
:data:`~.flow.FLOW`, so they cannot disagree; neither needs a script or anything fetched.

Layout: one lifeline per :class:`~.flow.Party`, left to right; a band per phase; one row per
step, its label above the arrow and its requirement ID in the left (SVG) or right (text)
margin. Requests are solid arrows, the server's frames dashed; a step that carries no frame
(a handshake, a close code) is drawn muted; a note spans the agent's and the server's lines.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from .errors import DocsError
from .flow import Party, Phase, Step

__all__ = ["TEXT_SPACING", "flow_svg", "flow_text", "step_label"]

_PARTIES = tuple(Party)

#: characters between two lifelines of the text diagram (a label gets this less six)
TEXT_SPACING = 54

# SVG geometry, in px of the viewBox
_GUTTER = 96  # the left margin holding requirement IDs
_LANE = 340  # between two lifelines
_HEAD = 40  # the participants' boxes
_PHASE = 28
_ROW = 30


def step_label(step: Step) -> str:
    """What a step's arrow says: the frame type and its detail, or the event."""
    if step.frame is None:
        return step.detail
    return f"{step.frame[1]}: {step.detail}" if step.detail else step.frame[1]


def _column(party: Party) -> int:
    return _PARTIES.index(party)


def flow_text(flow: tuple[Phase, ...]) -> list[str]:
    """The diagram as lines of monospace text (no trailing blanks)."""
    width = TEXT_SPACING * (len(_PARTIES) - 1) + 1
    head = [" "] * width
    for party in _PARTIES:
        start = min(max(0, _column(party) * TEXT_SPACING - len(party.value) // 2), width - len(party.value))
        head[start : start + len(party.value)] = party.value
    lines = ["".join(head).rstrip(), _lifelines(width)]
    for phase in flow:
        title = f"== {phase.title} "
        lines += [title + "=" * (width - len(title)), _lifelines(width)]
        for step in phase.steps:
            lines.append(f"{_text_row(step, width)}   {step.rule}")
    return [*lines, _lifelines(width)]


def _lifelines(width: int) -> str:
    row = [" "] * width
    for party in _PARTIES:
        row[_column(party) * TEXT_SPACING] = "|"
    return "".join(row)


def _text_row(step: Step, width: int) -> str:
    row = list(_lifelines(width))
    label = step_label(step)
    left, right = sorted((_column(step.sender), _column(step.receiver)))
    if left == right:  # a note across the agent's and the server's lines
        right = left + 1
    inner = TEXT_SPACING - 1
    if len(label) > inner - 6:
        raise DocsError(f"message flow step {label!r} is longer than {inner - 6} characters")
    if step.sender is step.receiver:
        segment = f" ~ {label} ~ ".center(inner)
    elif _column(step.sender) < _column(step.receiver):
        segment = f"-- {label} ".ljust(inner - 1, "-") + ">"
    else:
        segment = f"<-- {label} ".ljust(inner, "-")
    start = left * TEXT_SPACING + 1
    row[start : start + inner] = segment
    return "".join(row)


def flow_svg(flow: tuple[Phase, ...], link: Callable[[tuple[str, str]], str], title: str) -> str:
    """The diagram as one ``<svg>`` element; ``link`` gives the href of a frame's section."""
    width = _GUTTER + _LANE * (len(_PARTIES) - 1) + _LANE // 2
    y = _HEAD + 12
    rows: list[str] = []
    for phase in flow:
        rows += [
            f'<g class="phase"><rect x="0" y="{y}" width="{width}" height="{_PHASE - 6}" rx="4"/>'
            f'<text x="8" y="{y + 16}">{html.escape(phase.title)}</text></g>'
        ]
        y += _PHASE
        for step in phase.steps:
            rows += _svg_step(step, y, link)
            y += _ROW
    height = y + 8
    lifelines = []
    for party in _PARTIES:
        x = _x(party)
        lifelines += [
            f'<line class="life" x1="{x}" y1="{_HEAD}" x2="{x}" y2="{height}"/>',
            f'<rect class="party" x="{x - 80}" y="2" width="160" height="{_HEAD - 8}" rx="6"/>',
            f'<text class="party" x="{x}" y="{_HEAD / 2 + 3:g}" text-anchor="middle">{html.escape(party.value)}</text>',
        ]
    return "\n".join(
        [
            f'<svg class="flow" role="img" aria-labelledby="flow-title" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
            f'<title id="flow-title">{html.escape(title)}</title>',
            *lifelines,
            *rows,
            "</svg>",
        ]
    )


def _x(party: Party) -> int:
    return _GUTTER + _LANE // 4 + _column(party) * _LANE


def _svg_step(step: Step, y: int, link: Callable[[tuple[str, str]], str]) -> list[str]:
    rule = f'<text class="rule" x="4" y="{y + 19}">{html.escape(step.rule)}</text>'
    if step.sender is step.receiver:
        x1, x2 = _x(Party.AGENT) - 40, _x(Party.SERVER) + 40
        return [
            rule,
            f'<rect class="note" x="{x1}" y="{y + 3}" width="{x2 - x1}" height="{_ROW - 6}" rx="3"/>',
            f'<text class="event" x="{(x1 + x2) // 2}" y="{y + 19}" text-anchor="middle">'
            f"{html.escape(step.detail)}</text>",
        ]
    x1, x2 = _x(step.sender), _x(step.receiver)
    direction = 1 if x2 > x1 else -1
    tip = x2 - direction * 2
    kind = "reply" if step.sender is Party.SERVER else "request"
    muted = " event" if step.frame is None else ""
    line_y = y + 22
    label_x = min(x1, x2) + 12
    if step.frame is None:
        label = f'<tspan class="event">{html.escape(step.detail)}</tspan>'
    else:
        detail = f": {html.escape(step.detail)}" if step.detail else ""
        frame_type = f'<tspan class="type">{html.escape(step.frame[1])}</tspan>'
        label = f'<a href="{html.escape(link(step.frame))}">{frame_type}</a>{detail}'
    head = f"{tip},{line_y} {tip - direction * 9},{line_y - 4} {tip - direction * 9},{line_y + 4}"
    return [
        rule,
        f'<text x="{label_x}" y="{y + 15}">{label}</text>',
        f'<line class="arrow {kind}{muted}" x1="{x1}" y1="{line_y}" x2="{tip - direction * 8}" y2="{line_y}"/>',
        f'<polygon class="head{muted}" points="{head}"/>',
    ]
