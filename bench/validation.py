"""Hot-path validation cost: the compiled validator against the reference ``jsonschema``.

Two frames: a typical ``step`` frame and an ``observation`` frame of about 1 MB. For each,
the median cost of one call (microseconds) of:

- ``fast (entry point)``: ``Validator.is_valid`` on the entry point (compiled engine);
- ``fast (codec)``: ``FrameCodec.decode_value`` (dispatch on ``type``, compiled per-type
  schema, typed frame);
- ``reference``: ``jsonschema`` on the entry point;
- ``parse only``: ``parse_json`` on the text (for scale);
- ``full decode``: ``FrameCodec.decode`` on the text (parse + validate + typed frame).

Runs are interleaved (every method once per round) and the median over rounds is kept, so
a noisy neighbour skews all methods alike. Run: ``python -m bench.validation [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from openenv_anyio.core import ENTRY_POINTS, FrameCodec, dumps, parse_json, spec_validator

__all__ = ["run"]

STEP_TARGET_US = 2.0


def _frames() -> dict[str, tuple[str, dict[str, Any]]]:
    step = {"type": "step", "data": {"message": "hello, environment", "tokens": [1, 2, 3]}}
    pixels = list(range(180_000))  # about 1 MB of JSON text
    observation = {
        "type": "observation",
        "data": {"observation": {"pixels": pixels, "text": "x" * 1000}, "reward": 1.0, "done": False},
    }
    return {"step frame": ("client-frame", step), "1 MB observation frame": ("server-frame", observation)}


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _calibrate(fn: Callable[[], object], budget_s: float) -> int:
    """Calls per round so that one round of ``fn`` takes about ``budget_s``."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= budget_s / 4 or calls >= 1 << 20:
            elapsed = time.perf_counter() - start
            return max(1, int(calls * budget_s / max(elapsed, 1e-9)))
        calls *= 4


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure every method on every frame; return one row per (frame, method)."""
    rounds, budget_s = (5, 0.02) if quick else (15, 0.1)
    rows: list[dict[str, Any]] = []
    for case, (entry, frame) in _frames().items():
        validator = spec_validator(ENTRY_POINTS[entry])
        codec = FrameCodec(entry)
        text = dumps(frame)
        methods: dict[str, Callable[[], object]] = {
            "fast (entry point)": lambda: validator.is_valid(frame),
            "fast (codec)": lambda: codec.decode_value(frame),
            "reference (jsonschema)": lambda: validator.reference_is_valid(frame),
            "parse only (orjson)": lambda: parse_json(text),
            "full decode (parse+validate)": lambda: codec.decode(text),
        }
        assert all(fn() for fn in methods.values()), "benchmark frames must be valid"
        calls = {name: _calibrate(fn, budget_s) for name, fn in methods.items()}
        samples: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(rounds):
            for name, fn in methods.items():
                samples[name].append(_per_call_us(fn, calls[name]))
        reference = statistics.median(samples["reference (jsonschema)"])
        for name, values in samples.items():
            median = statistics.median(values)
            rows.append(
                {
                    "bench": "validation",
                    "case": case,
                    "frame_bytes": len(text.encode()),
                    "method": name,
                    "us": round(median, 3),
                    "ratio_to_jsonschema": round(median / reference, 4),
                }
            )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """Print the rows as an aligned table, and the step-frame target verdict."""
    header = f"{'case':<24} {'bytes':>9} {'method':<30} {'us/call':>12} {'x jsonschema':>13}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['case']:<24} {row['frame_bytes']:>9} {row['method']:<30} "
            f"{row['us']:>12.3f} {row['ratio_to_jsonschema']:>13.4f}"
        )
    fast_step = next(r for r in rows if r["case"] == "step frame" and r["method"] == "fast (entry point)")
    verdict = "met" if fast_step["us"] <= STEP_TARGET_US else "MISSED"
    print(f"\ntarget: step frame validation <= {STEP_TARGET_US} us: {verdict} ({fast_step['us']:.3f} us)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    print_table(run(quick=parser.parse_args().quick))


if __name__ == "__main__":
    main()
