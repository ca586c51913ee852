"""MkDocs hook: the user guide also shows files that live elsewhere in the repository.

The guide's pages are ``docs/*.md``; the normative protocol (``protocol/``), the spec's
changelog and ``SECURITY.md`` are mounted at their repository paths, so the site is the
repository with ``docs/`` as its root. A guide page links to a mounted file the way it would
on a repository browser (``../protocol/PROTOCOL.md`` from ``docs/client.md``); such links are
rewritten to the site's layout here, and every link is then checked by MkDocs (strict).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
DOCS = "docs"
#: repository files shown in the guide, as glob patterns relative to the repository's root
MOUNTED = (
    "protocol/PROTOCOL.md",
    "protocol/reference/**/*.md",
    "spec/CHANGELOG.md",
    "spec/v1/README.md",
    "spec/v1/*.json",
    "spec/v1/*.yaml",
    "spec/v1/frames/*.json",
    "spec/v1/http/*.json",
    "spec/v1/jsonrpc/*.json",
    "SECURITY.md",
)

LINK = re.compile(r"(\]\()([^)\s#]+)([^)]*\))")


def on_files(files: Files, config: Any) -> Files:
    for pattern in MOUNTED:
        paths = sorted(ROOT.glob(pattern))
        if not paths:
            raise ValueError(f"mount.py: nothing in the repository matches {pattern!r}")
        for path in paths:
            files.append(
                File(
                    path.relative_to(ROOT).as_posix(),
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def site_link(page_uri: str, target: str) -> str:
    """A guide page's repository-relative link, as the site lays the files out."""
    if target.startswith(("http:", "https:", "mailto:", "/")) or not target.startswith("../"):
        return target
    in_repo = posixpath.normpath(posixpath.join(DOCS, posixpath.dirname(page_uri), target))
    on_site = in_repo.removeprefix(DOCS + "/") if in_repo.startswith(DOCS + "/") else in_repo
    return posixpath.relpath(on_site, posixpath.dirname(page_uri) or ".")


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    if not Path(page.file.abs_src_path or "").is_relative_to(ROOT / DOCS):
        return markdown  # a mounted file: its links are already laid out as on the site
    uri = page.file.src_uri
    return LINK.sub(lambda m: m.group(1) + site_link(uri, m.group(2)) + m.group(3), markdown)
