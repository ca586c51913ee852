"""The user guide builds with no broken link, unknown anchor or page left out of its navigation
(mkdocs.yml turns each into a warning, --strict into a failure), and the README's links lead
somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert (tmp_path / "site" / "protocol" / "PROTOCOL" / "index.html").is_file()
    assert (tmp_path / "site" / "protocol" / "reference" / "frames" / "step" / "index.html").is_file()


def test_readme_links_lead_to_files() -> None:
    targets = README_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    relative = [target for target in targets if "://" not in target]
    assert relative, "the README links into the guide"
    assert [target for target in relative if not (ROOT / target).exists()] == []
