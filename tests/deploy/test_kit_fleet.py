"""``openenv-anyio check`` through ``deploy/``'s HAProxy (``balance hdr(OpenEnv-Affinity)``)
in front of two servers: the kit sends one affinity key per session it opens, so each
session's connections reach one server and the verdicts are those of one server, run after
run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, ServerConfig

from .proxies import DEPLOY, _running, free_port, placeholders

RUNS = 3


@pytest.fixture
def two_servers_behind_haproxy(tmp_path: Path) -> Iterator[str]:
    """``deploy/haproxy/haproxy.cfg`` with its third server line left out (two servers)."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    config = tmp_path / "haproxy.cfg"
    lines = (DEPLOY / "haproxy" / "haproxy.cfg").read_text().splitlines(keepends=True)
    config.write_text("".join(line for line in lines if "OPENENV_SERVER_3" not in line))
    with (
        EnvServer(EchoEnv, ServerConfig(port=0)).run_in_thread() as one,
        EnvServer(EchoEnv, ServerConfig(port=0)).run_in_thread() as two,
    ):
        port = free_port()
        env = {**os.environ, **placeholders([urlsplit(one.url).netloc, urlsplit(two.url).netloc], port)}
        subprocess.run([binary, "-c", "-q", "-f", str(config)], check=True, env=env)
        with _running([binary, "-db", "-f", str(config)], port, tmp_path / "haproxy.log", env) as url:
            yield url


def test_check_passes_run_after_run_behind_two_servers(two_servers_behind_haproxy: str, tmp_path: Path) -> None:
    for run in range(RUNS):
        report = tmp_path / f"run{run}.json"
        done = subprocess.run(
            [sys.executable, "-m", "openenv_anyio", "check", two_servers_behind_haproxy, "--json", str(report)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"run {run + 1}: {done.stdout[-4000:]}"
    evidence = report.read_text()
    assert "OpenEnv-Affinity" in evidence
