"""Upstream's Level-2 runtime checks (the ``openenv`` 0.10 wheel's ``openenv.validation``)
against a running server: run by the openenv-0.10.0 peer venv's Python
(``tests/upstream_peers.run_peer_script``).

    python runtime_checks.py URL PLAN_JSON [REWARD_LOW REWARD_HIGH]

PLAN_JSON is a ``RuntimePlan`` (``{"plan_schema_version": "1", "reset": {"episode_id", "seed"},
"actions": [...]}``). ``collect_runtime_evidence`` reads ``/schema`` and plays reset, state,
(step, state) x N, close on one ``/ws`` session; ``RewardWellFormedGrader`` (rewards finite and
in the declared range, ``[0, 1]`` unless given), ``ObservationSchemaGrader`` (observations
against ``/schema``'s ``observation`` and ``reset_observation``) and ``StateContractGrader``
(the episode id and step counts) judge it. Prints one JSON line:
``{"version", "failure", "checks": {check_id: {"status", "evidence"}}}``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

EPISODE_TIMEOUT_S = 120.0


def _manifest(low: float, high: float) -> Any:
    """The least manifest the runtime graders read: its declared reward range."""
    from openenv.validation.manifest import NormalizedManifest

    return NormalizedManifest.model_validate(
        {
            "manifest_schema_version": "1",
            "name": "interop",
            "signature": "openenv.yaml",
            "reward": {"range": [low, high], "floor_margin": 0.0},
            "resources": {"cpu": 1.0, "memory_mb": 512, "disk_mb": 512, "episode_timeout_s": EPISODE_TIMEOUT_S},
            "capabilities": {"verifier": {"kind": "reward_channel"}},
            "types": {"tags": ["interop"]},
        }
    )


def main() -> None:
    from openenv.validation.graders import Subject
    from openenv.validation.graders.runtime import (
        ObservationSchemaGrader,
        RewardWellFormedGrader,
        StateContractGrader,
    )
    from openenv.validation.runtime.collector import collect_runtime_evidence
    from openenv.validation.runtime.contracts import RuntimePlan

    url, plan = sys.argv[1], RuntimePlan.model_validate(json.loads(sys.argv[2]))
    low, high = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else (0.0, 1.0)
    evidence = collect_runtime_evidence(url, plan, episode_timeout_s=EPISODE_TIMEOUT_S)
    with tempfile.TemporaryDirectory() as scratch:
        subject = Subject(
            root=Path(scratch),
            manifest=_manifest(low, high),
            image_ref=None,
            running=None,
            outputs_dir=Path(scratch),
            runtime_evidence=evidence,
        )
        graders = (RewardWellFormedGrader(), ObservationSchemaGrader(), StateContractGrader())
        results = [grader.run(subject) for grader in graders]
    print(
        json.dumps(
            {
                "version": metadata.version("openenv"),
                "failure": evidence.failure_reason,
                "exchanges": [row.operation for row in evidence.exchanges],
                "reset_observation_schema": evidence.reset_observation_schema_json is not None,
                "checks": {r.check_id: {"status": r.status.value, "evidence": r.evidence} for r in results},
            }
        )
    )


if __name__ == "__main__":
    main()
