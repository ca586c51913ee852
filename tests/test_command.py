"""The ``openenv-anyio`` command itself: ``--version``, listings that end in a pipe."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv_anyio", *args], capture_output=True, text=True, timeout=120)


def test_version() -> None:
    done = _run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"openenv-anyio {importlib.metadata.version('openenv-anyio')}"


def test_check_list_needs_no_url() -> None:
    done = _run("check", "--list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("WS-CONN-01")


def test_check_without_url_is_a_one_line_usage_error() -> None:
    done = _run("check")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "URL" in done.stderr.strip().splitlines()[-1]


def test_a_listing_whose_reader_has_left_is_no_traceback() -> None:
    """``openenv-anyio check --list | head -1``: when the reader is gone before the listing is
    written (closed here before the command has even started), the command ends quietly."""
    process = subprocess.Popen(
        [sys.executable, "-m", "openenv_anyio", "check", "--list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    error = process.stderr.read()
    assert process.wait(timeout=60) != 0
    assert "Traceback" not in error and "BrokenPipeError" not in error, error
