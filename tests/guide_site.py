"""The user guide built as CI builds it (``mkdocs build --strict``), for tests that read the site."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_guide(site: Path) -> Path:
    """Build the guide into ``site`` (a failure of the build fails the test); returns ``site``."""
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return site
