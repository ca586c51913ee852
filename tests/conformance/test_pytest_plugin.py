"""The pytest plugin: ``pytest --openenv-url URL`` runs one item per case; without the option
it adds nothing. Each run is a real pytest process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .minimal_server import Flaws, MinimalServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "openenv_anyio.conformance.pytest_plugin"


def _vector_dependent(skipped: int, xfailed: int) -> dict[str, int]:
    """SPEC-VEC-01 is skipped without the spec's vectors and an (optional) xfail with them."""
    return {"skipped": skipped, "xfailed": xfailed + 1}


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_own.py").write_text("def test_own():\n    assert 1 + 1 == 2\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            "-p",
            "no:cacheprovider",
            "-q",
            "-rfEsx",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_own.py"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def outcome_counts(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1]
    return {name: int(count) for count, name in re.findall(r"(\d+) (\w+)", last)}


def test_without_url_the_plugin_adds_nothing(tmp_path: Path) -> None:
    done = run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcome_counts(done.stdout) == {"passed": 1}


def test_help_lists_the_options(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "--help")
    assert "--openenv-url=URL" in done.stdout and "--openenv-expected-failures" in done.stdout


def test_one_item_per_case_against_a_correct_server(tmp_path: Path, minimal_url: str) -> None:
    done = run_pytest(tmp_path, "--openenv-url", minimal_url, "--openenv-frame-limit-mb", "1", "-rA")
    assert done.returncode == 0, done.stdout + done.stderr
    # the 6 extension cases, the 3 MCP cases, the OpenAPI case, the 3 telemetry cases, the
    # Task API case and the token case are not applicable (skipped) on a base server without
    # MCP, telemetry, tasks or tokens
    expected = {"passed": 33, "skipped": 15}
    assert outcome_counts(done.stdout) == expected  # 47 cases + the project's own test
    assert "PASSED ::openenv-conformance::WS-ORDER-01" in done.stdout


def test_real_server_defects_fail_their_items(tmp_path: Path, openenv_core_url: str) -> None:
    done = run_pytest(tmp_path, "--openenv-url", openenv_core_url)
    assert done.returncode == 1
    assert outcome_counts(done.stdout) == {"failed": 2, "passed": 31, **_vector_dependent(skipped=13, xfailed=1)}
    failed = sorted(re.findall(r"FAILED \S*openenv-conformance::(\S+)", done.stdout))
    assert failed == ["WS-ERR-02", "WS-ERR-07"]
    assert "SESSION_ERROR" in done.stdout  # the evidence is in the failure report


def test_expected_failures_become_xfail(tmp_path: Path, openenv_core_url: str) -> None:
    baseline = tmp_path / "baseline.txt"
    baseline.write_text("WS-ERR-02\nWS-ERR-07\n")
    done = run_pytest(tmp_path, "--openenv-url", openenv_core_url, "--openenv-expected-failures", str(baseline))
    assert done.returncode == 0, done.stdout
    assert outcome_counts(done.stdout) == {"passed": 31, **_vector_dependent(skipped=13, xfailed=3)}


def test_a_server_that_stops_answering_fails_one_item_and_skips_the_rest(tmp_path: Path) -> None:
    with serve_in_thread(MinimalServer(Flaws(stops_answering_after=1))) as url:
        done = run_pytest(tmp_path, "--openenv-url", url, "--openenv-timeout", "2")
    assert done.returncode == 1
    # the project's own test, WS-CONN-01 and SCHEMA-01 pass; the 43 other cases are not run
    assert outcome_counts(done.stdout) == {"failed": 1, "passed": 3, "skipped": 44}
    assert re.findall(r"FAILED \S*openenv-conformance::(\S+)", done.stdout) == ["WS-RESET-01"]
    assert "the server stopped answering after WS-CONN-01: GET /health gave no answer within 2 s" in done.stdout


@pytest.mark.parametrize("module", ["trio", "httpx", "trio_websocket"])
def test_loading_the_plugin_imports_no_io_library(module: str) -> None:
    code = f"import sys, {PLUGIN}; sys.exit({module!r} in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0


def test_entry_point_and_dash_p_load_the_plugin_once(tmp_path: Path) -> None:
    """As installed: the pytest11 entry point of pyproject.toml, plus an explicit ``-p``."""
    import tomllib

    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert list(entry_points.values()) == [PLUGIN]
    dist = tmp_path / "site" / "openenv_anyio_entry-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: openenv-anyio-entry\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    )
    (tmp_path / "test_own.py").write_text("def test_own():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}"}
    for extra in ([], ["-p", PLUGIN]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *extra,
                "-p",
                "no:cacheprovider",
                "-q",
                "--rootdir",
                str(tmp_path),
                str(tmp_path / "test_own.py"),
                "--help",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert "--openenv-url=URL" in done.stdout
