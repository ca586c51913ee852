"""Upstream OpenEnv releases as subprocess peers, each from its own virtual environment.

Every ``tools/test-deps/peers/NAME.txt`` is one upstream release; ``tools/install-test-deps.sh``
builds ``.peers/NAME/`` from it (CI does too). The first ``distribution==version`` line of the
file names the release. The upstream distributions ``openenv-core`` and ``openenv`` both
provide the ``openenv.core`` package, so they never share an environment with each other or
with our ``.venv``; each peer venv also has our package installed (editable), so that an
environment written against that release can be served through our adapter there.

What a test can do with a :class:`Peer`:

- :func:`template_env`: the environment that release's ``openenv init`` generates (what a new
  user starts from); :func:`with_session_limit` raises its ``max_concurrent_envs`` as the
  template's own comment tells users to;
- :func:`serve_upstream`: upstream's own server for such an environment (``uvicorn
  server.app:app``, as the template's docs say), on a loopback port;
- :func:`serve_ours`: our server (``openenv-anyio serve``) run inside the peer venv, serving
  an environment written against that release through our adapter;
- :func:`run_peer_script`: a script of ``tests/peer_side/`` run by the peer's Python (its
  last stdout line is JSON, returned parsed), e.g. upstream's client driving a server;
- :meth:`Peer.bin`: any console script of the peer (``openenv validate --url ...``).

Adding an upstream release is adding one requirements file: :data:`PEERS` lists them all and
:func:`peer_params` parametrizes a test over them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PEER_REQUIREMENTS = ROOT / "tools" / "test-deps" / "peers"
PEER_VENVS = ROOT / ".peers"
PEER_SIDE = Path(__file__).resolve().parent / "peer_side"

#: how long a peer process may take to start serving (cold imports of FastAPI/gradio are slow;
#: an environment built on FastMCP took over 100 s on a loaded 2-core machine)
START_TIMEOUT_S = 300.0
#: how long a peer script may run (upstream's CLI and clients import FastMCP and gradio too)
SCRIPT_TIMEOUT_S = 600.0
#: how long a stopped server may take to exit after SIGTERM before it is killed
STOP_TIMEOUT_S = 15.0

_PINNED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)")


@dataclass(frozen=True)
class Peer:
    """One upstream release and the virtual environment it is installed in."""

    name: str  #: the requirements file's stem: ``openenv-0.10.0``
    distribution: str  #: ``openenv`` or ``openenv-core``
    version: str  #: ``0.10.0``
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def bin(self, script: str) -> Path:
        """A console script installed in the peer venv (``openenv``, ``openenv-anyio``, ...)."""
        return self.venv / "bin" / script

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", self.version)[:3])

    def require(self) -> None:
        """Fail (not skip: CI always builds the peers) with the fix when the venv is missing."""
        if not self.python.exists():
            pytest.fail(
                f"upstream peer {self.name} is not installed: run tools/install-test-deps.sh "
                f"(builds {self.venv.relative_to(ROOT)} from {PEER_REQUIREMENTS.relative_to(ROOT)}/{self.name}.txt)",
                pytrace=False,
            )

    def __str__(self) -> str:
        return self.name


def _read_peer(requirements: Path) -> Peer:
    for line in requirements.read_text().splitlines():
        match = _PINNED.match(line)
        if match:
            return Peer(requirements.stem, match.group(1).lower(), match.group(2), PEER_VENVS / requirements.stem)
    raise ValueError(f"{requirements}: no pinned 'distribution==version' line names the upstream release")


#: every upstream release the interop tests run against, oldest first
PEERS: tuple[Peer, ...] = tuple(
    sorted((_read_peer(path) for path in PEER_REQUIREMENTS.glob("*.txt")), key=lambda peer: peer.version_tuple)
)


def peer_params() -> list[Any]:
    """``pytest.param`` per peer, with the peer's name as the test id."""
    return [pytest.param(peer, id=peer.name) for peer in PEERS]


def peer_named(distribution: str) -> Peer:
    """The newest peer of ``distribution`` (``openenv`` or ``openenv-core``)."""
    found = [peer for peer in PEERS if peer.distribution == distribution]
    if not found:
        raise LookupError(f"no peer of {distribution} in {PEER_REQUIREMENTS}")
    return found[-1]


def _peer_environ() -> dict[str, str]:
    """The environment for a peer process: no proxies (loopback only), no stray virtualenv."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "virtual_env", "pythonpath"}
    }
    environ["NO_PROXY"] = "127.0.0.1,localhost"
    environ["PYTHONUNBUFFERED"] = "1"
    # upstream's web interface is opt-in; telemetry and update checks off for reproducibility
    environ.setdefault("HF_HUB_OFFLINE", "1")
    environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    return environ


TEMPLATE_ENV_NAME = "tiny_env"


def template_env(peer: Peer, parent: Path) -> Path:
    """Generate ``openenv init tiny_env`` with ``peer``'s CLI under ``parent``; return its folder.

    Slow (upstream's CLI imports its whole stack): tests share one per peer through the
    ``upstream_template`` fixture of ``tests/conftest.py``.
    """
    peer.require()
    target = parent / TEMPLATE_ENV_NAME
    subprocess.run(
        [str(peer.bin("openenv")), "init", TEMPLATE_ENV_NAME, "--output-dir", str(parent)],
        check=True,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env=_peer_environ(),
        cwd=parent,
    )
    return target


def with_session_limit(template: Path, dest: Path, max_concurrent_envs: int) -> Path:
    """A copy of a template env under ``dest`` whose ``server/app.py`` serves
    ``max_concurrent_envs`` sessions instead of the template's 1 (its own comment: "increase
    this number to allow more concurrent WebSocket sessions")."""
    copy = dest / template.name
    shutil.copytree(template, copy, ignore=shutil.ignore_patterns("__pycache__"))
    app = copy / "server" / "app.py"
    source, count = re.subn(r"max_concurrent_envs=\d+", f"max_concurrent_envs={max_concurrent_envs}", app.read_text())
    if count != 1:
        raise AssertionError(f"{app}: expected one max_concurrent_envs=... in the template, found {count}")
    app.write_text(source)
    return copy


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _wait_healthy(url: str, process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    with httpx.Client(trust_env=False, timeout=2.0) as http:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited with {process.returncode} before serving: {_tail(process)}")
            try:
                if http.get(f"{url}/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer /health within {START_TIMEOUT_S} s")
            time.sleep(0.05)


def _tail(process: subprocess.Popen[str]) -> str:
    if process.stderr is None:
        return ""
    with contextlib.suppress(Exception):
        return process.stderr.read()[-2000:]
    return ""


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM to the process we started, then SIGKILL if it outlives the grace period."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@contextlib.contextmanager
def serve_upstream(peer: Peer, app_dir: Path, app: str = "server.app:app") -> Iterator[str]:
    """Upstream's server for the environment in ``app_dir``: ``uvicorn server.app:app`` from
    the peer venv, on a loopback socket we bind (passed with ``--fd``); yields the base URL."""
    peer.require()
    sock = _free_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    command = [
        str(peer.python),
        "-m",
        "uvicorn",
        app,
        "--fd",
        str(sock.fileno()),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    process = subprocess.Popen(
        command,
        cwd=app_dir,
        env=_peer_environ(),
        pass_fds=(sock.fileno(),),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_healthy(url, process, f"{peer} server ({' '.join(command[1:4])})")
        yield url
    finally:
        _stop(process)
        sock.close()


_SERVING = re.compile(r"serving on (http://\S+)")


@contextlib.contextmanager
def serve_ours(
    peer: Peer,
    app_dir: Path,
    target: str,
    *extra_args: str,
    extra_environ: Mapping[str, str] | None = None,
    log: list[str] | None = None,
) -> Iterator[str]:
    """``openenv-anyio serve TARGET`` run inside the peer venv from ``app_dir`` (so that an
    environment written against that release is served through our adapter), with
    ``extra_environ`` in its environment; yields the URL. ``log``: gets the lines the server
    printed up to its URL (its start-up log and banner)."""
    peer.require()
    command = [str(peer.bin("openenv-anyio")), "serve", target, "--port", "0", *extra_args]
    environ = {**_peer_environ(), **(extra_environ or {})}
    # the env's folder, then this checkout (the peer venv's editable install may point at another)
    environ["PYTHONPATH"] = os.pathsep.join((str(app_dir), str(ROOT)))
    process = subprocess.Popen(
        command,
        cwd=app_dir,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        url = None
        lines: list[str] = []
        while url is None:
            line = process.stderr.readline()  # the server prints its URL once it listens
            if not line:
                raise RuntimeError(f"{peer}: {' '.join(command[1:3])} exited before serving: {''.join(lines)[-2000:]}")
            lines.append(line)
            found = _SERVING.search(line)
            url = found.group(1) if found else None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer}: {' '.join(command[1:3])} did not serve within {START_TIMEOUT_S} s")
        _wait_healthy(url, process, f"{peer}: openenv-anyio serve")
        if log is not None:
            log.extend(lines)
        yield url
    finally:
        _stop(process)


def run_peer_script(
    peer: Peer, script: str, *args: str, cwd: Path | None = None, pythonpath: Sequence[Path] = ()
) -> Any:
    """Run ``tests/peer_side/SCRIPT`` with the peer's Python (``pythonpath`` first on its path:
    ``ROOT`` for this tree's package); return its last stdout line, parsed as JSON. A
    non-zero exit fails with the script's stderr."""
    peer.require()
    environ = _peer_environ()
    if pythonpath:
        environ["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    completed = subprocess.run(
        [str(peer.python), str(PEER_SIDE / script), *args],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env=environ,
        cwd=cwd or ROOT,
    )
    if completed.returncode != 0:
        raise AssertionError(
            f"{peer}: {script} {' '.join(args)} exited {completed.returncode}:\n{completed.stderr[-4000:]}"
        )
    lines = completed.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"{peer}: {script} printed nothing; stderr:\n{completed.stderr[-4000:]}")
    return json.loads(lines[-1])


def run_peer_command(
    peer: Peer, script: str, args: Sequence[str], *, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A console script of the peer (``openenv``) with ``args``; the completed process, unchecked."""
    peer.require()
    return subprocess.run(
        [str(peer.bin(script)), *args],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env=_peer_environ(),
        cwd=cwd or ROOT,
    )


__all__ = [
    "PEERS",
    "Peer",
    "peer_named",
    "peer_params",
    "run_peer_command",
    "run_peer_script",
    "serve_ours",
    "serve_upstream",
    "template_env",
    "with_session_limit",
]

if __name__ == "__main__":  # a quick listing: python tests/upstream_peers.py
    for peer in PEERS:
        print(
            f"{peer.name}: {peer.distribution} {peer.version} ({'built' if peer.python.exists() else 'missing'})",
            file=sys.stdout,
        )
