"""A smoke run of ``python -m bench.handover`` at a small size, on real server processes (and
a real ``redis-server``): the report's structure, every variant measured, every kept session
answered after the restart. Nothing here asserts on speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {"no store", "store (SQLite)", "--durable SQLite", "--durable Redis"}


def test_a_small_run_measures_every_variant_and_the_restart(tmp_path: Path) -> None:
    out = tmp_path / "handover.json"
    argv = [sys.executable, "-m", "bench.handover", "--quick", "--sessions", "2", "--kept", "20", "--json", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["throughput"]) == VARIANTS
    for figures in report["throughput"].values():
        assert figures["steps_per_s"] > 0 and len(figures["runs"]) == 2
    assert report["throughput"]["no store"]["ratio"] == 1.0
    restart = report["restart"]
    assert restart["sessions"] == 20
    assert 0 < restart["listening_s"] <= restart["first_answer_s"] <= restart["all_answered_s"]
    assert "steps/s at 2 sessions" in done.stdout and "restart with 20 kept sessions" in done.stdout
