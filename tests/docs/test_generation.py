"""`openenv-anyio docs` output is deterministic, and the committed reference is fresh."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from openenv_anyio.core import load_spec
from openenv_anyio.docs import generate

from .conftest import RunDocs
from .spec_copy import REFERENCE_DIR, REPO, tree, write_example

REGENERATE = "openenv-anyio docs` (from the repository root)"


def _docs_in_subprocess(out: Path, output_format: str, hash_seed: str) -> None:
    """One run in a fresh interpreter (its own hash seed: set-order dependence would show)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": hash_seed}
    subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "docs", "--out", str(out), "--format", output_format],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_two_runs_give_identical_bytes(tmp_path: Path) -> None:
    for output_format in ("markdown", "html"):
        first, second = tmp_path / f"{output_format}-1", tmp_path / f"{output_format}-2"
        _docs_in_subprocess(first, output_format, "1")
        _docs_in_subprocess(second, output_format, "2")
        assert tree(first), f"{output_format}: nothing generated"
        assert tree(first) == tree(second), f"{output_format}: two runs differ"


def test_examples_render_deterministically(spec_copy: Path) -> None:
    write_example(
        spec_copy, "valid/docs-b.json", entry="client-frame", valid=True, description="b", frame={"type": "state"}
    )
    write_example(
        spec_copy, "valid/docs-a.json", entry="client-frame", valid=True, description="a", frame={"type": "state"}
    )
    spec = load_spec(spec_copy)
    page = generate(spec)["frames/state.md"]
    assert page == generate(spec)["frames/state.md"]
    assert page.index("valid/docs-a.json") < page.index("valid/docs-b.json")


def test_committed_reference_is_fresh(tmp_path: Path, run_docs: RunDocs) -> None:
    fresh = tmp_path / "reference"
    assert run_docs("--out", fresh).code == 0
    committed = tree(REFERENCE_DIR)
    regenerated = tree(fresh)
    stale = sorted(
        name for name in committed.keys() | regenerated.keys() if committed.get(name) != regenerated.get(name)
    )
    assert not stale, f"protocol/reference is stale ({', '.join(stale)}): regenerate it with `{REGENERATE}"


def test_check_passes_on_the_committed_reference(run_docs: RunDocs) -> None:
    result = run_docs("--check", "--out", REFERENCE_DIR)
    assert result.code == 0, result.err
    assert "up to date" in result.out


def test_check_names_stale_missing_and_obsolete_files(tmp_path: Path, run_docs: RunDocs) -> None:
    out = tmp_path / "reference"
    assert run_docs("--out", out).code == 0
    (out / "frames" / "step.md").write_text("# edited by hand\n", encoding="utf-8")
    (out / "error-codes.md").unlink()
    (out / "frames" / "teleport.md").write_text(
        (out / "frames" / "close.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (out / "NOTES.md").write_text("hand-written, not generated\n", encoding="utf-8")

    result = run_docs("--check", "--out", out)

    assert result.code == 1
    assert result.err.count("\n") == 1, result.err
    assert "frames/step.md (differs)" in result.err
    assert "error-codes.md (missing)" in result.err
    assert "frames/teleport.md (no longer generated)" in result.err
    assert "NOTES.md" not in result.err
    assert "openenv-anyio docs --out" in result.err  # how to regenerate


def test_writing_repairs_the_tree_and_keeps_hand_written_files(tmp_path: Path, run_docs: RunDocs) -> None:
    out = tmp_path / "reference"
    assert run_docs("--out", out).code == 0
    pristine = tree(out)
    (out / "frames" / "step.md").write_text("# edited by hand\n", encoding="utf-8")
    (out / "frames" / "teleport.md").write_bytes(pristine["frames/close.md"])
    (out / "NOTES.md").write_text("hand-written, not generated\n", encoding="utf-8")

    result = run_docs("--out", out)

    assert result.code == 0
    assert "frames/step.md" in result.out and "frames/teleport.md (removed)" in result.out
    assert tree(out) == {**pristine, "NOTES.md": b"hand-written, not generated\n"}
    assert run_docs("--check", "--out", out).code == 0


def test_html_and_markdown_share_a_directory(tmp_path: Path, run_docs: RunDocs) -> None:
    """Writing one format never removes the other format's files."""
    out = tmp_path / "reference"
    assert run_docs("--out", out).code == 0
    assert run_docs("--out", out, "--format", "html").code == 0
    assert run_docs("--check", "--out", out).code == 0
    assert run_docs("--check", "--out", out, "--format", "html").code == 0


def test_the_default_column_shows_the_schemas_defaults_and_only_where_there_are_any() -> None:
    """It used to be empty in every table: reset's ``data`` declares ``{}``, and a table
    where no field declares a default has no Default column."""
    reference_dir = Path(__file__).resolve().parents[2] / "protocol" / "reference" / "frames"
    reset = (reference_dir / "reset.md").read_text(encoding="utf-8")
    assert "| Default |" in reset
    assert re.search(r"^\| `data` \| object \| no \| [^|]+ \| `\{\}` \|", reset, re.M), reset
    step = (reference_dir / "step.md").read_text(encoding="utf-8")
    assert "| Field |" in step and "Default" not in step
