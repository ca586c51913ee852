"""Smoke runs of the scale scenario (``bench.scale``) at a small N, on real server processes.

They check the report's structure and that every session got exactly its steps, counted on
the env side (the step ledger the bench envs write when closed). Nothing here asserts on speed.
"""

from __future__ import annotations

import functools
import socket
import time

import anyio
import pytest

from bench import hostile_clients, loadgen, scale, sessions
from bench.procs import free_port, kill_group, spawn
from bench.stacks import ours

PHASE_KEYS = {"connect", "reset", "steps", "close"}


def _check_complete(figures: dict[str, object], n: int, steps: int) -> None:
    assert "unavailable" not in figures, figures
    assert figures["sessions"] == n and figures["steps_per_session"] == steps
    assert figures["success_pct"] == 100.0, figures["failures"]
    assert figures["failures"] == {}
    assert figures["env_side"] == {
        "sessions_ok": n,
        "exact_steps": n,
        "wrong_steps": [],
        "not_recorded": 0,
        "closed_more_than_once": 0,
    }
    assert set(figures["server_cpu_ms_per_session"]) == PHASE_KEYS | {"total"}  # type: ignore[arg-type]
    assert set(figures["phase_wall_s"]) == PHASE_KEYS  # type: ignore[arg-type]
    assert set(figures["step_ms"]) == {"p50", "p99", "p99.9"}  # type: ignore[arg-type]
    assert set(figures["connect_ms"]) == {"p50", "p99"}  # type: ignore[arg-type]
    step_ms = figures["step_ms"]
    assert isinstance(step_ms, dict) and step_ms["p50"] is not None
    assert step_ms["p50"] <= step_ms["p99"] <= step_ms["p99.9"]
    assert isinstance(figures["server_rss_mb"], dict) and figures["server_rss_mb"]["peak"] > 0
    assert isinstance(figures["client_fd_limit"], int) and figures["client_fd_limit"] > 0


def test_ours_burst_of_64_sessions_gets_every_step_on_the_env_side() -> None:
    ours.check_available()
    [figures] = scale.burst(scale.VARIANTS["ours"], 64, kind="echo", steps=2, cap_s=60.0, loaders=2)
    _check_complete(figures, 64, 2)
    assert figures["load_processes"] == 2
    assert figures["steps_per_s"] is not None and figures["steps_per_s"] > 0
    thresholds = figures["client_gc_thresholds"]
    assert isinstance(thresholds, list) and len(thresholds) == 1, thresholds  # both load processes alike
    assert thresholds[0][0] >= loadgen.YOUNG_GC_THRESHOLD and thresholds[0][2] >= loadgen.FULL_GC_THRESHOLD
    assert "load processes 2" in scale._line(figures)


def test_rounds_run_one_after_another_on_one_server_and_each_gets_every_step() -> None:
    """A trainer's rounds of episodes: the second round's sessions are new episodes on the
    same server (the env side's ledger tells them apart: nothing counted twice)."""
    ours.check_available()
    rounds = scale.burst(scale.VARIANTS["ours"], 32, kind="echo", steps=2, cap_s=60.0, rounds=2)
    assert [figures.get("round") for figures in rounds] == [1, 2]
    for figures in rounds:
        _check_complete(figures, 32, 2)
    assert "round 2" in scale._line(rounds[1])
    medians = scale.repeated([figures | {"load_1min_before_after": (0.0, 0.0)} for figures in rounds])
    assert [row["round"] for row in medians] == [1, 2]
    assert all(row["server_cpu_ms_per_session"]["median"] > 0 for row in medians)


def test_the_line_says_why_sessions_are_not_exact_on_the_env_side() -> None:
    found = {"sessions_ok": 10, "exact_steps": 7, "not_recorded": 2, "closed_more_than_once": 0}
    found["wrong_steps"] = [{"episode": "s0-3", "env_counted": (1, 2)}]
    text = scale._env_side(found)
    assert text.startswith("7/10") and "2 not recorded within" in text and "s0-3" in text
    assert scale._env_side(found | {"exact_steps": 10, "not_recorded": 0, "wrong_steps": []}) == "10/10"


@pytest.mark.parametrize("flag", ["--load-processes", "--rounds"])
def test_counts_below_one_are_refused_in_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        scale.main(["burst", flag, "0"])
    assert exited.value.code == 2
    assert f"{flag} must be at least 1" in capsys.readouterr().err


def test_free_burst_runs_straight_through_and_reports_cpu_in_all_only() -> None:
    ours.check_available()
    [figures] = scale.burst(scale.VARIANTS["ours"], 32, kind="echo", steps=2, cap_s=60.0, gated=False)
    _check_complete(figures, 32, 2)
    assert figures["gated"] is False
    cpu = figures["server_cpu_ms_per_session"]
    assert isinstance(cpu, dict) and [cpu[phase] for phase in sorted(PHASE_KEYS)] == [None] * 4
    assert cpu["total"] is not None and figures["server_rss_kb_per_idle_session"] is None


def test_upstream_burst_of_16_sessions_gets_every_step_on_the_env_side() -> None:
    if not scale.UPSTREAM_PYTHON.exists():
        pytest.skip(f"upstream OpenEnv 0.10's peer venv is not installed ({scale.UPSTREAM_PYTHON})")
    [figures] = scale.burst(scale.VARIANTS["upstream"], 16, kind="echo", steps=2, cap_s=60.0)
    _check_complete(figures, 16, 2)


def test_hostile_clients_run_beside_probes_that_all_step() -> None:
    ours.check_available()
    figures = hostile_clients.run(probes=4, steps=20, counts={"silent": 20, "nonreader": 2, "flood": 50})
    for kind in ("quiet", "silent", "nonreader", "flood"):
        assert figures[kind]["p50_ms"] <= figures[kind]["p99_ms"], figures
    for kind in ("silent", "nonreader", "flood"):  # the same bad client against the bare sink
        control = figures[kind]["control"]
        assert control["p50_ms"] <= control["p99_ms"] and control["p99_vs_quiet"] > 0, figures
    assert figures["flood"]["count"] == 50 and figures["flood"]["p99_vs_quiet"] > 0


def test_the_hostile_control_sink_answers_an_upgrade_once_and_then_holds_the_connection() -> None:
    proc, _ = spawn(["-m", "bench.hostile_clients", "sink"], stdout=-1)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as upgrading:
            upgrading.sendall(hostile_clients.UPGRADE.format(host="127.0.0.1").encode())
            answer = b""
            while not answer.endswith(b"\r\n\r\n"):
                answer += upgrading.recv(4096)
            assert answer == hostile_clients.SINK_ANSWER
            assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in answer  # RFC 6455's example key
            upgrading.sendall(b"more")
            upgrading.settimeout(0.5)
            with pytest.raises(TimeoutError):  # nothing more is answered, and it stays open
                upgrading.recv(1)
        silent.settimeout(0.5)
        with pytest.raises(TimeoutError):
            silent.recv(1)
        silent.close()
    finally:
        kill_group(proc, grace_s=1.0)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sessions_refused_at_connect_are_counted_by_cause_and_pass_every_gate(backend: str) -> None:
    ours.check_available()
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    gates: list[str] = []

    async def between(phase: str) -> None:
        gates.append(phase)

    run = functools.partial(
        sessions.run_phased_burst,
        ours.open_session,
        url,
        [f"e-{i}" for i in range(5)],
        2,
        start_at=time.time(),
        cap_s=30.0,
        between=between,
    )
    records = anyio.run(run, backend=backend)
    assert gates == list(sessions.PHASES)  # each gate opened once, in order, though no session got through
    assert [(r.ok, r.failed_in, r.cause) for r in records] == [(False, "connect", "connect: connect refused")] * 5


def test_repeated_runs_are_summed_up_as_medians_and_ranges() -> None:
    """``--repeats``: each size and env's runs give a median, a range and the load around them."""

    def run(steps_per_s: float, p99: float, load: tuple[float, float]) -> dict[str, object]:
        return {
            "variant": "ours",
            "sessions": 16,
            "env": "echo",
            "success_pct": 100.0,
            "steps_per_s": steps_per_s,
            "steps_per_server_cpu_s": steps_per_s * 2,
            "step_ms": {"p50": 1.0, "p99": p99, "p99.9": p99},
            "server_cpu_ms_per_session": {"total": p99 / 10},
            "load_1min_before_after": load,
        }

    rows = scale.repeated([run(100.0, 3.0, (1.0, 2.0)), run(300.0, 9.0, (4.0, 0.5)), run(200.0, 5.0, (1.5, 1.5))])
    assert rows == [
        {
            "variant": "ours",
            "sessions": 16,
            "env": "echo",
            "runs": 3,
            "steps_per_s": {"median": 200.0, "min": 100.0, "max": 300.0},
            "steps_per_server_cpu_s": {"median": 400.0, "min": 200.0, "max": 600.0},
            "step_p99_ms": {"median": 5.0, "min": 3.0, "max": 9.0},
            "server_cpu_ms_per_session": {"median": 0.5, "min": 0.3, "max": 0.9},
            "load_1min": {"min": 0.5, "max": 4.0},
            "success_pct_min": 100.0,
        }
    ]
