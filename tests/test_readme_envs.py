"""Every environment the README (and the user guide under docs/) shows passes the conformance
kit: the classes of its Python blocks (taken from the Markdown itself, so the test follows
the text) and the importable targets of its ``openenv-anyio serve`` commands, each served
and checked with ``openenv-anyio check``."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from serve_process import serve_process

from openenv_anyio.server import EnvServer, ServerConfig

ROOT = Path(__file__).resolve().parent.parent
#: the README and the user guide under docs/ (the environments shown in either)
SHOWN = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TEXT = "\n".join(path.read_text(encoding="utf-8") for path in SHOWN)
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
#: (class name, the block that defines it) for every environment class the README shows
ENV_CLASSES = [
    (match.group(1), block) for block in BLOCKS for match in re.finditer(r"^class (\w+)\(Environment\):", block, re.M)
]
#: ``serve MODULE:ATTR`` targets of the README's shell commands, but for its own files
#: (``mygame``, checked through its class above) and placeholders (``mypkg``, ``my_env``)
SERVE_TARGETS = sorted(
    {
        target
        for block in re.findall(r"```bash\n(.*?)```", TEXT, re.S)
        for target in re.findall(r"openenv-anyio serve ([\w.]+:[\w.-]+)", block)
        if target.split(":")[0].split(".")[0] not in ("mygame", "mypkg", "my_env")
    }
)


def _check(url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "check", url], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_readme_shows_environments() -> None:
    assert {name for name, _ in ENV_CLASSES} >= {"Counter", "Notes"}
    assert "openenv_anyio.envs.echo:EchoEnv" in SERVE_TARGETS


@pytest.mark.parametrize(("name", "block"), ENV_CLASSES, ids=[name for name, _ in ENV_CLASSES])
def test_a_readme_environment_class_passes_the_kit(name: str, block: str, tmp_path: Path) -> None:
    path = tmp_path / f"readme_{name.lower()}.py"
    path.write_text(block, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with EnvServer(getattr(module, name), ServerConfig(port=0)).run_in_thread() as running:
        _check(running.url)


@pytest.mark.parametrize("target", SERVE_TARGETS)
def test_a_readme_serve_command_passes_the_kit(target: str) -> None:
    with serve_process(target) as served:
        _check(served.url)
