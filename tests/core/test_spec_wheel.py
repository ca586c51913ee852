"""The built wheel carries the spec: installed, the core loads it from another directory.

The wheel is built offline (no build isolation, no index) and unpacked into a temporary
directory, which is all a subprocess started elsewhere gets on its path: the checkout's
``spec/`` cannot be found from there.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from pathlib import Path
import openenv_anyio
from openenv_anyio.core import decode_client_frame, load_spec, spec_validator, ProtocolError
from openenv_anyio.core.spec import spec_root

site = Path(sys.argv[1]).resolve()
assert Path(openenv_anyio.__file__).resolve().is_relative_to(site), openenv_anyio.__file__
assert spec_root() == site / "openenv_anyio" / "_spec", spec_root()
spec = load_spec()
assert len(spec.documents) >= 12
assert spec_validator("client-frame.json").is_valid({"type": "step", "data": {"message": "hi"}})
assert not spec_validator("client-frame.json").reference_is_valid({"type": "step"})
assert decode_client_frame('{"type":"reset","data":{"seed":1}}').kwargs == {"seed": 1}
try:
    decode_client_frame('{"type":"reset","data":{"seed":-1}}')
except ProtocolError as error:
    assert error.pointer == "/data/seed"
examples = list((spec.directory / "examples").glob("*/*.json"))
assert examples, "examples missing from the wheel"
print("ok", len(spec.documents), len(examples))
"""


def test_installed_wheel_carries_the_spec(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the wheel offline needs hatchling (dev extra)")
    dist = tmp_path / "dist"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("openenv_anyio-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "openenv_anyio/_spec/v1/client-frame.json" in names
    assert not any(name.startswith("spec/") for name in names)

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(site)],
        cwd=elsewhere,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok ")
