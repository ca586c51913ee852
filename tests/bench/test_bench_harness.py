"""End-to-end smoke tests of the benchmark harness (bench/) on the real OpenEnv stack.

They run tiny scenarios (a few steps) against real server processes on loopback and check
that measurements come back and that every server process is gone afterwards. Nothing here
asserts on speed.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time

import anyio
import pytest

from bench import sessions
from bench.measure import Context, Profile, Variant, measure_throughput
from bench.pool import ServerPool
from bench.procs import REPO_ROOT, running_server
from bench.results import Row
from bench.scenario_validation import validation_rows
from bench.scenarios import select
from bench.stacks import ours, raw

pytest.importorskip("openenv.core.env_server.http_server", reason="openenv-core (interop extra) not installed")

from bench.stacks import openenv_core


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_openenv_server_and_client_measure_steps_and_bursts() -> None:
    server = openenv_core.start_server("echo")
    try:
        run = functools.partial(openenv_core.run_sessions, server.url, 2, 5, timeout_s=30.0)
        result = anyio.run(run, backend="asyncio")
        assert result.errors == []
        assert result.steps == 10
        assert result.steps_per_s > 0
        assert server.rss_kb() > 0
        burst = functools.partial(
            sessions.run_burst, openenv_core.open_session, server.url, 3, 2, start_at=time.time(), cap_s=30.0
        )
        outcomes = anyio.run(burst, backend="asyncio")
        assert [o.ok for o in outcomes] == [True, True, True]
    finally:
        server.stop()
    assert _gone(server.pid)


def test_raw_client_against_bare_hypercorn_echo() -> None:
    with running_server("echo-hypercorn", ["echo-hypercorn"]) as server:
        result = anyio.run(functools.partial(raw.run_sessions, server.url, 1, 5, timeout_s=30.0), backend="asyncio")
        assert result.errors == [] and result.steps == 5
    assert _gone(server.pid)


def _tiny_row(variants: list[Variant], baseline: str, repeats: int) -> Row:
    """A row of 1 session, 0.05 s runs, measured the way the scenarios measure."""
    profile = Profile(True, repeats, 0.05, (1,), 1, 1, 1, (1,), 10.0, False)
    with ServerPool() as pool:
        return measure_throughput(
            Context(profile, pool, log=lambda _: None), "t", "tiny", variants, 1, baseline=baseline
        )


def test_measure_throughput_row_reports_missing_side_and_ratio_base() -> None:
    variants = [
        Variant("openenv", "openenv", "openenv", "echo"),
        Variant("bogus", "raw", "no-such-server", "echo"),
    ]
    row = _tiny_row(variants, "openenv", repeats=2)
    base = row.measurement("openenv")
    assert base is not None and base.ok and base.runs == 2
    assert base.metrics["steps_per_s"] > 0 and base.metrics["p99_ms"] >= base.metrics["p50_ms"]
    missing = row.measurement("bogus")
    assert missing is not None and not missing.ok and "no-such-server" in missing.unavailable
    assert row.to_json()["ratios"] == {"bogus": None}


def test_cli_rejects_unknown_scenario_and_runs_validation_row() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        select(["nope"])
    done = _python_m(["bench", "--quick", "--only", "validation"], timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[8] validation: step frame" in done.stdout
    bad = _python_m(["bench", "--only", "nope"], timeout=60)
    assert bad.returncode == 2 and "unknown scenario" in bad.stderr and "Traceback" not in bad.stderr


def _python_m(argv: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m ARGV`` in the repository, its output captured as text."""
    environ = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    argv = [sys.executable, "-m", *argv]
    return subprocess.run(argv, cwd=REPO_ROOT, env=environ, capture_output=True, text=True, timeout=timeout)


def _require_ours() -> None:
    """Our stack is part of this package: if it cannot run, that is a failure, not a skip."""
    ours.check_available()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ours_server_and_client_measure_steps(backend: str) -> None:
    _require_ours()
    server = ours.start_server("echo_inline")
    try:
        run = functools.partial(ours.run_sessions, server.url, 2, 5, timeout_s=30.0)
        result = anyio.run(run, backend=backend)
        assert result.errors == []
        assert result.steps == 10
    finally:
        server.stop()
    assert _gone(server.pid)


def test_crossed_pairs_interoperate() -> None:
    _require_ours()
    variants = [
        Variant("ours->openenv", "ours", "openenv", "echo"),
        Variant("openenv->ours", "openenv", "ours", "echo"),
    ]
    row = _tiny_row(variants, "ours->openenv", repeats=1)
    for measurement in row.measurements:
        assert measurement.ok and measurement.errors == 0, measurement


def test_validation_results_become_one_row_per_case_with_the_reference_as_baseline() -> None:
    result = [
        {"case": "step", "method": "fast", "us": 0.5, "frame_bytes": 72},
        {"case": "step", "method": "reference (jsonschema)", "us": 50.0, "frame_bytes": 72},
        {"case": "big", "method": "fast", "us": 1.0, "frame_bytes": 10},
    ]
    rows = validation_rows(result)
    assert [r.case for r in rows] == ["validation: step", "validation: big"]
    assert rows[0].baseline == "reference (jsonschema)"
    assert rows[0].ratio("fast") == pytest.approx(0.01)
    assert rows[1].baseline == "" and rows[1].measurement("fast") is not None


def test_client_cpu_measures_every_variant_and_rejects_bad_ones() -> None:
    """bench.client_cpu: a tiny interleaved run prints one line per variant; a bad variant is
    a one-line error with exit status 2."""
    _require_ours()
    done = _python_m(
        ["bench.client_cpu", "--runs", "1", "--steps", "5", "--warmup", "1", "--sessions", "2"], timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:]]
    assert rows == ["openenv", "ours-asyncio", "ours-trio"]
    bad = _python_m(["bench.client_cpu", "--variant", "x=openenv:trio"], timeout=60)
    assert bad.returncode == 2 and "asyncio only" in bad.stderr and "Traceback" not in bad.stderr


def test_connection_cpu_measures_each_server_and_rejects_bad_input() -> None:
    """bench.connection_cpu: a tiny run prints one line per variant with no failed
    connections; an unknown server or a connection count below one is a usage error."""
    _require_ours()
    done = _python_m(
        [
            "bench.connection_cpu",
            "--connections",
            "20",
            "--repeats",
            "1",
            "ours:echo",
            "echo-hypercorn",
        ],
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["ours:echo", "echo-hypercorn"]
    assert all("ms server CPU/connection" in line and "failed" not in line for line in lines)
    for bad in (["nginx"], ["ours:nope"], ["--connections", "0", "ours"]):
        refused = _python_m(["bench.connection_cpu", *bad], timeout=60)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, (bad, refused.stderr)


def test_client_sessions_measures_both_variants_and_rejects_bad_input() -> None:
    """bench.client_sessions: each variant's child runs with its own collection thresholds,
    a tiny run prints a row per size and variant; a size below one is a usage error."""
    _require_ours()
    from bench import client_sessions
    from bench.stacks import ours

    server = ours.start_server("echo_inline")
    try:
        found = {v: client_sessions._run_child(v, server.url, 4, 1, "asyncio") for v in client_sessions.VARIANTS}
    finally:
        server.stop()
    thresholds = {v: (f["young_threshold"], f["oldest_threshold"]) for v, f in found.items()}
    assert thresholds == {
        "default": (700, 10),  # Python's own
        "rare-full-gc": (700, client_sessions.RARE_FULL_GC),
        "rarer-gc": (client_sessions.RARER_YOUNG_GC, client_sessions.RARE_FULL_GC),
    }
    assert all(figures["total"] > 0 for figures in found.values())
    done = _python_m(["bench.client_sessions", "--sessions", "3", "--runs", "1", "--steps", "1"], timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[:2] for line in done.stdout.splitlines()[2:]]
    assert rows == [["3", "default"], ["3", "rare-full-gc"], ["3", "rarer-gc"]]
    refused = _python_m(["bench.client_sessions", "--sessions", "0"], timeout=60)
    assert refused.returncode == 2 and "at least 1" in refused.stderr and "Traceback" not in refused.stderr


def test_loadgen_connect_timeout_reaches_our_client_and_only_ours() -> None:
    """bench.loadgen --connect-timeout: our client's bound on connect + handshake is the one
    given (a listener that never answers the handshake: the session fails naming it); the
    option is refused for another stack's client."""
    import json
    import socket
    import tempfile
    from pathlib import Path

    _require_ours()
    with socket.socket() as silent, tempfile.TemporaryDirectory() as tmp:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts (in the kernel) and never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        (Path(tmp) / "go").write_text(repr(time.time()))
        out = Path(tmp) / "out.json"
        done = _python_m(
            [
                "bench.loadgen",
                "ours",
                url,
                "--sessions",
                "1",
                "--steps",
                "1",
                "--dir",
                tmp,
                "--cap",
                "60",
                "--connect-timeout",
                "0.25",
                "--out",
                str(out),
            ],
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        written = json.loads(out.read_text())
        [outcome] = written["sessions"]
        assert written["cpu_s"] > 0
        assert not outcome["ok"] and "connect_timeout_s=0.25 s" in outcome["error"], outcome
        refused = _python_m(
            [
                "bench.loadgen",
                "openenv",
                url,
                "--sessions",
                "1",
                "--dir",
                tmp,
                "--cap",
                "60",
                "--connect-timeout",
                "30",
                "--out",
                str(out),
            ],
            timeout=120,
        )
        assert refused.returncode == 2 and "our client only" in refused.stderr, refused.stderr
