"""The user guide's tools example (docs/mcp.md) is real: the environment is served and the client snippet runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from openenv_anyio.server import EnvServer, ServerConfig

GUIDE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE_PAGE.read_text(encoding="utf-8"), re.S)


def test_readme_tools_example_runs(tmp_path: Path) -> None:
    env_code = next(block for block in BLOCKS if "from openenv_anyio.tools import tool" in block)
    client_code = next(block for block in BLOCKS if "env.call_tool(" in block)
    namespace: dict[str, object] = {}
    exec(compile(env_code, "docs/mcp.md", "exec"), namespace)
    with EnvServer(namespace["Notes"], ServerConfig(port=0)).run_in_thread() as running:  # type: ignore[arg-type]
        script = tmp_path / "tools_snippet.py"
        # the block is a whole script; its main()'s body is what the check below runs
        inside = client_code.split("async def main():\n", 1)[1].split("\n\n\nanyio.run(main)", 1)[0]
        body = inside.replace("http://127.0.0.1:8000", running.url)
        script.write_text(
            "import anyio\nfrom openenv_anyio import EnvClient\n\nasync def main():\n"
            + body
            + "\n    assert [t.name for t in tools] == ['remember'] and count == 1\n\nanyio.run(main)\n",
            encoding="utf-8",
        )
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
