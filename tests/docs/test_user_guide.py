"""The user guide builds with no broken link, unknown anchor or page left out of its navigation
(mkdocs.yml turns each into a warning, --strict into a failure), and the README's links lead
somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from tests.guide_site import build_guide

ROOT = Path(__file__).resolve().parents[2]
README_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    build_guide(tmp_path / "site")
    assert (tmp_path / "site" / "protocol" / "PROTOCOL" / "index.html").is_file()
    assert (tmp_path / "site" / "protocol" / "reference" / "frames" / "step" / "index.html").is_file()


def test_readme_links_lead_to_files() -> None:
    targets = README_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    relative = [target for target in targets if "://" not in target]
    assert relative, "the README links into the guide"
    assert [target for target in relative if not (ROOT / target).exists()] == []


HREF = re.compile(r'href="([^"#?]*)[^"]*"')


def test_every_link_in_the_built_guide_leads_to_a_file(tmp_path: Path) -> None:
    """MkDocs checks the links of the guide's own pages; a mounted file (PROTOCOL.md) links the
    way the repository is laid out, and a link to a folder of the repository that the site
    does not hold (``../spec/v1/``) used to be dead in the built site only."""
    site = build_guide(tmp_path / "site")
    dead = set()
    for page in site.rglob("*.html"):
        for target in HREF.findall(page.read_text(encoding="utf-8")):
            if not target or "://" in target or target.startswith(("/", "mailto:", "javascript:")):
                continue
            found = (page.parent / target).resolve()
            if not (found.is_file() or (found / "index.html").is_file()):
                dead.add(f"{page.relative_to(site)} -> {target}")
    assert sorted(dead) == []


def test_the_guide_has_a_front_door_that_installs_and_runs_the_demo() -> None:
    """A reader who lands on the built guide finds, from its home page, how to install and
    run the demo (tests/test_snippets.py runs that page's demo block and parses its install
    block)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- Getting started: getting-started.md" in nav
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "](getting-started.md)" in home and "`README.md`" not in home
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "pip install -e '.[gym]'" in page
    assert re.search(r"<!-- snippet: run -->\n```bash\n\.venv/bin/openenv-anyio demo\n```", page)
