"""The README's code is real: its example environment is served and its client code runs."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from openenv_anyio.server import EnvServer, ServerConfig

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
SHOWN_URL = "http://127.0.0.1:8000"


def load_example_env(tmp_path: Path) -> ModuleType:
    source = next(block for block in BLOCKS if block.startswith("# mygame.py"))
    path = tmp_path / "mygame.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("mygame", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_env_and_client_snippets_run(tmp_path: Path) -> None:
    env_module = load_example_env(tmp_path)
    client_code = next(block for block in BLOCKS if "async with EnvClient" in block)
    sync_code = next(block for block in BLOCKS if ".sync() as env" in block)
    with EnvServer(env_module.Counter, ServerConfig(port=0)).run_in_thread() as running:
        for code in (client_code, "from openenv_anyio import EnvClient\n" + sync_code):
            script = tmp_path / "snippet.py"
            script.write_text(code.replace(SHOWN_URL, running.url), encoding="utf-8")
            done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        checked = subprocess.run(
            [sys.executable, "-m", "openenv_anyio", "check", running.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert checked.returncode == 0, checked.stdout[-3000:]
