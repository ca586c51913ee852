"""The case catalogue: stable, unique IDs, and every requirement it cites exists in PROTOCOL.md."""

from __future__ import annotations

import re
from pathlib import Path

from openenv_anyio.conformance.cases import CASES, select_cases

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol" / "PROTOCOL.md"


def test_case_ids_are_unique_and_well_formed() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Z]+(-[A-Z]+)*-[0-9]{2}", case_id) for case_id in ids)
    assert ids[-1] == "SCHEMA-01"  # the synthetic check runs last


def test_every_cited_requirement_is_defined_in_protocol_md() -> None:
    defined = set(re.findall(r"\*\*([A-Z]+(?:-[A-Z]+)*-[0-9]+)\*\*", PROTOCOL.read_text(encoding="utf-8")))
    cited = {requirement for case in CASES for requirement in case.requirements}
    assert cited and cited <= defined, sorted(cited - defined)


def test_select_by_id_and_group_keeps_run_order() -> None:
    assert [c.id for c in select_cases(["schema-01", "WS-CLOSE-01"])] == ["WS-CLOSE-01", "SCHEMA-01"]
    assert [c.id for c in select_cases(["WS-RESET"])] == ["WS-RESET-01", "WS-RESET-02", "WS-RESET-03", "WS-RESET-04"]
