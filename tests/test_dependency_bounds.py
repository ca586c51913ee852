"""Every lower bound of pyproject.toml's dependencies is recorded here with why it is that
version, and the bounds that keep other packages out are checked against their metadata.

A bound set by habit ("the version we happened to test with") keeps a user's other packages
out for nothing: a package pinning ``wsproto==1.0.0`` could not be installed beside us while
we asked for wsproto 1.3. ``FLOORS`` names, for each dependency, the oldest release known to
work and how that was established; a bound that moves without its record (or the reverse)
fails here.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# Tested in one virtual environment holding every lowered floor at once.
TESTED = (
    "the tests that exercise it (WebSocket server and client, logs and metrics, the conformance "
    "kit against our server) pass on it; older releases not tried"
)
NOT_LOWERED = "not lowered yet: the release the whole suite runs with"

#: dependency -> (the oldest release the bound admits, why that one)
FLOORS: dict[str, tuple[str, str]] = {
    "anyio": ("4.16", NOT_LOWERED),
    "trio": ("0.35", NOT_LOWERED),
    "outcome": ("1.2", TESTED),
    "wsproto": (
        "0.15",
        "the oldest release installable beside h11 0.16 (0.14 pins h11~=0.8.1); the client's "
        "FrameProtocol, the server adapter's events and the handshake helpers pass the ws, "
        "client, server and resume tests on 0.14 and 1.0, and the WebSocket ones on 0.15",
    ),
    "h11": ("0.16", "0.16 fixes request smuggling through lenient chunked bodies (CVE-2025-43859)"),
    "quart-trio": ("0.11.1", TESTED),
    "quart": (
        "0.19",
        "imported directly (Response, request, redirect), not only through quart-trio; quart-trio 0.11.1's own floor",
    ),
    "hypercorn": ("0.18", "the server adapts Hypercorn 0.18's internals (server/hypercorn_adapter/inventory.py)"),
    "jsonschema": ("4.26", NOT_LOWERED),
    "referencing": ("0.37", NOT_LOWERED),
    "jsonschema-rs": ("0.61", "its Registry and dereference API as of 0.61 (it changes between minors)"),
    "orjson": ("3.9.15", "3.9.15 is the first to refuse nesting deeper than 1024 (WS-CONN-5)"),
    "trio-websocket": ("0.11.1", TESTED),
    "httpx": ("0.26", "0.26 added AsyncClient(proxy=...), which check and demo use"),
    "prometheus-client": ("0.20", TESTED),
    "structlog": ("22.1", TESTED),
}


def declared() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return {(r := Requirement(line)).name: r for line in project["dependencies"]}


def lower_bound(specifier: SpecifierSet) -> str | None:
    floors = [s.version for s in specifier if s.operator == ">="]
    return floors[0] if len(floors) == 1 else None


def test_every_dependency_has_a_recorded_floor() -> None:
    assert sorted(declared()) == sorted(FLOORS)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_declared_lower_bound_is_the_recorded_one(name: str) -> None:
    requirement = declared()[name]
    floor, why = FLOORS[name]
    assert why.strip()
    assert lower_bound(requirement.specifier) == floor, f"{name}: declared {requirement.specifier}, recorded >={floor}"


def test_a_package_pinning_wsproto_1_0_0_installs_beside_us() -> None:
    """wsproto 1.0.0 satisfies our bound and every installed package's that needs wsproto
    (Hypercorn, trio-websocket), and its own h11 range (h11>=0.9.0,<1, from its metadata)
    meets ours."""
    pinned = Version("1.0.0")
    assert pinned in declared()["wsproto"].specifier
    needing = {
        dist.metadata["Name"]: Requirement(line).specifier
        for dist in importlib.metadata.distributions()
        for line in dist.requires or ()
        if Requirement(line).name == "wsproto"
        and Requirement(line).marker is None
        and dist.metadata["Name"] != "openenv-anyio"  # ours is read from pyproject.toml above
    }
    assert {"hypercorn", "trio-websocket"} <= {name.lower() for name in needing}
    for name, specifier in needing.items():
        assert pinned in specifier, f"{name} needs wsproto{specifier}"
    wsproto_1_0_0_needs = SpecifierSet(">=0.9.0,<1")
    ours = declared()["h11"].specifier
    installed_h11 = Version(importlib.metadata.version("h11"))
    assert installed_h11 in ours and installed_h11 in wsproto_1_0_0_needs
