"""Generate the protocol reference (Markdown pages or one HTML page) from the spec alone.

``generate(spec, "markdown")`` returns ``{relative path: text}``; the ``openenv-anyio docs``
command writes or checks it. Broken input raises :class:`DocsError` (one line, naming the file).
"""

from __future__ import annotations

from typing import Literal

from openenv_anyio.core import Spec

from .errors import BrokenExampleError, DocsError, UnresolvableRefError
from .model import Reference, build_reference

__all__ = [
    "FORMATS",
    "BrokenExampleError",
    "DocsError",
    "Reference",
    "UnresolvableRefError",
    "build_reference",
    "generate",
]

Format = Literal["markdown", "html"]
FORMATS: tuple[Format, ...] = ("markdown", "html")


def generate(spec: Spec, output_format: Format = "markdown") -> dict[str, str]:
    """Every output file of the reference: relative path -> text (deterministic)."""
    reference = build_reference(spec)
    if output_format == "html":
        from .html import render_html

        return render_html(reference)
    from .markdown import render_markdown

    return render_markdown(reference)
