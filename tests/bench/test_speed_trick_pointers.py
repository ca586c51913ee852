"""The package's pointers into bench/README.md lead somewhere: each names a section of it
(``bench/README.md, "Section"``), and that section names the module that points at it, so a
trick's comment and the description of what it measured cannot drift apart unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "openenv_anyio"
README = REPO / "bench" / "README.md"

#: one pointer: the file, then one or more quoted section titles ("A" and "B")
_POINTER = re.compile(r'bench/README\.md, ("[^"]+"(?:(?:,| and) "[^"]+")*)')
#: a line break inside a comment or docstring, with the next line's indent and comment mark
_LINE_BREAK = re.compile(r"\s*\n\s*(?:#:?\s*)?")


def _sections() -> dict[str, str]:
    """bench/README.md's ``##`` sections: title -> text."""
    sections: dict[str, str] = {}
    for chunk in README.read_text().split("\n## ")[1:]:
        title, _, body = chunk.partition("\n")
        sections[title.strip()] = body
    return sections


def _mentions(module: Path) -> list[tuple[int, str]]:
    """Each mention of bench/README.md in ``module``: its line and its text up to where the
    pointer's titles would end (line breaks in comments and docstrings joined)."""
    text = module.read_text()
    found = []
    for match in re.finditer(r"bench/README\.md", text):
        line = text.count("\n", 0, match.start()) + 1
        found.append((line, _LINE_BREAK.sub(" ", text[match.start() : match.start() + 200])))
    return found


def _pointer_name(module: Path) -> str:
    """How bench/README.md names ``module``: its path in the package (a package by its folder)."""
    relative = module.relative_to(PACKAGE)
    return f"{relative.parent}/" if relative.name == "__init__.py" else str(relative)


def test_every_pointer_names_a_section_that_names_its_module() -> None:
    sections = _sections()
    pointers = 0
    problems = []
    for module in sorted(PACKAGE.rglob("*.py")):
        for line, text in _mentions(module):
            where = f"{module.relative_to(REPO)}:{line}"
            pointer = _POINTER.match(text)
            if pointer is None:
                problems.append(f'{where}: not a pointer of the form bench/README.md, "Section": {text[:80]!r}')
                continue
            pointers += 1
            for title in re.findall(r'"([^"]+)"', pointer.group(1)):
                if title not in sections:
                    problems.append(f"{where}: bench/README.md has no section {title!r}")
                elif _pointer_name(module) not in sections[title]:
                    problems.append(f"{where}: bench/README.md, {title!r} does not name {_pointer_name(module)}")
    assert not problems, "\n".join(problems)
    assert pointers >= 20  # the package's tricks point here: finding none means the search broke


def test_the_pointer_pattern_reads_pointers_across_comment_lines() -> None:
    """A pointer broken over two comment lines reads as one; a mention that names no section
    is no pointer."""
    wrapped = '# a block at a time (bench/README.md, "Client\n    # CPU per step"); each key'
    assert _POINTER.match(_LINE_BREAK.sub(" ", wrapped[wrapped.index("bench") :]))
    two = 'bench/README.md, "Server CPU per step" and "Server CPU per connection", has'
    assert re.findall(r'"([^"]+)"', _POINTER.match(two).group(1)) == [  # type: ignore[union-attr]
        "Server CPU per step",
        "Server CPU per connection",
    ]
    assert _POINTER.match("bench/README.md, scenario 9") is None
    assert _POINTER.match("bench/README.md has what it measured") is None
