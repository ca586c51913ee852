"""Autobahn|Testsuite, sections 1-10, on every path that carries WebSocket traffic: the
server's direct ``/ws`` path and its ASGI path (``/ws/ui``, ``WS /mcp``, TLS, HTTP/2), the
client's transport on trio and on asyncio (``tools/autobahn/run``: four legs side by side,
a minute or two). Deselect with ``-m "not autobahn"``; the per-case reports of the last
run are in ``.autobahn/reports/``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "tools" / "autobahn" / "run"


@pytest.mark.autobahn
def test_autobahn_testsuite_passes_on_every_websocket_path() -> None:
    done = subprocess.run([sys.executable, str(RUN)], capture_output=True, text=True, timeout=1800)
    print(done.stdout)  # the per-path summary (pytest -rP shows it)
    assert done.returncode == 0, f"tools/autobahn/run exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
