"""The twelve scenarios by id and name; each returns rows of side-by-side measurements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.measure import Context
from bench.results import Row
from bench.scenario_frames import scenario_frames
from bench.scenario_idle import scenario_idle
from bench.scenario_scaling import scenario_scaling
from bench.scenario_throughput import (
    scenario_adapter,
    scenario_async,
    scenario_backends,
    scenario_big,
    scenario_ceiling,
    scenario_inline,
    scenario_isolate,
    scenario_sync,
)
from bench.scenario_validation import scenario_validation


@dataclass(frozen=True)
class Scenario:
    id: str
    slug: str
    title: str
    run: Callable[[Context], list[Row]]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("1", "sync", "sync env, default execution (thread hop both sides)", scenario_sync),
    Scenario("2", "inline", "fast sync env declared non-blocking vs OpenEnv's thread hop", scenario_inline),
    Scenario("3", "async", "async env on both sides", scenario_async),
    Scenario("4", "backends", "our client on asyncio vs trio", scenario_backends),
    Scenario("5", "ceiling", "bare Hypercorn/trio echo ceiling: our protocol overhead", scenario_ceiling),
    Scenario("6", "big", "10 MB observation per step", scenario_big),
    Scenario("7", "idle", "memory per idle session", scenario_idle),
    Scenario("8", "validation", "frame validation cost", scenario_validation),
    Scenario("9", "scaling", "OpenEnv's scaling experiment (1 s blocking steps)", scenario_scaling),
    Scenario(
        "10", "adapter", "an openenv-core env through our adapter vs the same logic in our env API", scenario_adapter
    ),
    Scenario("11", "frames", "valid 90 MiB frames: the longest step of the other sessions, peak RSS", scenario_frames),
    Scenario("12", "isolate", "process isolation vs thread execution, same env and client", scenario_isolate),
)


def select(names: list[str] | None) -> list[Scenario]:
    """Scenarios by id or slug (all when ``names`` is empty); ValueError on an unknown name."""
    if not names:
        return list(SCENARIOS)
    by_name = {s.id: s for s in SCENARIOS} | {s.slug: s for s in SCENARIOS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = ", ".join(f"{s.id}/{s.slug}" for s in SCENARIOS)
        raise ValueError(f"unknown scenario {', '.join(unknown)} (known: {known})")
    return [s for s in SCENARIOS if s in {by_name[n] for n in names}]
