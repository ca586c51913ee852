"""The two-line Dockerfile change of docs/serving.md ("In a container"), on the env package each
upstream release's ``openenv init`` generates: the changed ``CMD`` line is run as the image
would run it (with the package's folder for ``/app/env``, loopback and a free port for
``0.0.0.0:8000``), from the peer's virtual environment, and the server it starts serves
the package's app. Where a Docker daemon runs, the image itself is built as well."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv_anyio import EnvClient
from tests.upstream_peers import ROOT, Peer, _peer_environ, _stop, _wait_healthy, peer_params

PAGE = ROOT / "docs" / "serving.md"


def _shown_change() -> tuple[str, str, str]:
    """The page's diff: the dependency line added, the CMD line removed and the one added."""
    diff = re.search(r"```diff\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert diff, "docs/serving.md shows the Dockerfile change as a diff block"
    lines = diff.group(1).splitlines()
    dependency = next(line[1:].strip() for line in lines if line.startswith("+") and "CMD" not in line)
    removed = next(line[1:] for line in lines if line.startswith("-CMD"))
    added = next(line[1:] for line in lines if line.startswith("+CMD"))
    return dependency, removed, added


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _command(cmd_line: str, app_dir: Path, port: int) -> list[str]:
    """A Dockerfile ``CMD ["sh", "-c", "..."]`` as this machine runs it."""
    words: list[str] = json.loads(cmd_line.removeprefix("CMD").strip())
    assert words[:2] == ["sh", "-c"], words
    script = words[2].replace("/app/env", shlex.quote(str(app_dir)))
    script = script.replace("--host 0.0.0.0", "--host 127.0.0.1").replace("--port 8000", f"--port {port}")
    return [*words[:2], script]


@pytest.mark.parametrize("peer", peer_params())
def test_the_documented_cmd_line_serves_the_template_package(peer: Peer, upstream_template: Any) -> None:
    template: Path = upstream_template(peer)
    dependency, removed, added = _shown_change()
    dockerfile = (template / "server" / "Dockerfile").read_text(encoding="utf-8")
    assert removed in dockerfile.splitlines(), "the page's '-' line is the generated Dockerfile's CMD"
    dependencies = tomllib.loads((template / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert json.loads(dependency.rstrip(",")) == "openenv-anyio" and "openenv-anyio" not in dependencies

    port = _free_port()
    environ = _peer_environ()
    # what the image's ENV lines set: its venv first on PATH, the package on PYTHONPATH (and
    # this checkout, which the peer venv's editable install may not point at)
    environ["PATH"] = os.pathsep.join((str(peer.python.parent), environ.get("PATH", "")))
    environ["PYTHONPATH"] = os.pathsep.join((str(template), str(ROOT)))
    process = subprocess.Popen(
        _command(added, template, port),
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, f"{peer}: the Dockerfile's CMD")
        schema = httpx.get(f"{url}/schema", timeout=10, trust_env=False).json()
        assert "message" in schema["action"]["properties"]  # the template's own Action model
        with EnvClient(url).sync() as env:
            env.reset()
            assert env.step({"message": "hi"}).observation  # served by openenv-anyio
    finally:
        _stop(process)


def _docker_daemon() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.skipif(not _docker_daemon(), reason="no Docker daemon here: the CMD line is run by the test above")
@pytest.mark.parametrize("peer", peer_params())
def test_the_changed_dockerfile_builds(peer: Peer, upstream_template: Any, tmp_path: Path) -> None:
    package = tmp_path / "package"
    shutil.copytree(upstream_template(peer), package)
    dependency, removed, added = _shown_change()
    dockerfile = package / "server" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text(encoding="utf-8").replace(removed, added), encoding="utf-8")
    pyproject = package / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace("dependencies = [", f"dependencies = [\n    {dependency}", 1), encoding="utf-8")
    built = subprocess.run(
        ["docker", "build", "-f", str(dockerfile), "-t", f"openenv-anyio-test-{peer.name}", str(package)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert built.returncode == 0, built.stderr[-4000:]
