"""Fixtures for the reference-generator tests: a private copy of the spec, the CLI in-process."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from openenv_anyio.cli import main

from .spec_copy import SPEC_ROOT, DocsRun

RunDocs = Callable[..., DocsRun]


@pytest.fixture
def run_docs(capsys: pytest.CaptureFixture[str]) -> RunDocs:
    """Run ``openenv-anyio docs ARGS`` in this process and capture its exit code and output."""

    def run(*args: str | Path) -> DocsRun:
        capsys.readouterr()
        code = main(["docs", *map(str, args)])
        captured = capsys.readouterr()
        return DocsRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def spec_copy(tmp_path: Path) -> Path:
    """A private copy of the spec root (the directory holding ``v1/``), free to break."""
    root = tmp_path / "spec"
    shutil.copytree(SPEC_ROOT, root, ignore=shutil.ignore_patterns("examples"))
    return root
