"""The proxy configurations of ``deploy/`` run by the real engines (Debian's ``haproxy`` and
``nginx``) on loopback ports, in front of servers the test runs."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
START_TIMEOUT_S = 20.0
_PLACEHOLDER = re.compile(r"\$\{(OPENENV_[A-Z0-9_]+)\}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def render(template: str, values: Mapping[str, str]) -> str:
    """``${OPENENV_*}`` placeholders filled as ``envsubst`` would (nginx's own ``$vars`` stay)."""
    missing = sorted(set(_PLACEHOLDER.findall(template)) - set(values))
    if missing:
        raise KeyError(f"no value for {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def placeholders(servers: list[str], port: int) -> dict[str, str]:
    values = {"OPENENV_LISTEN": f"127.0.0.1:{port}"}
    values.update({f"OPENENV_SERVER_{index}": address for index, address in enumerate(servers, 1)})
    return values


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"proxy exited ({process.returncode}): {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.05)
    raise TimeoutError(f"proxy not listening on {port}: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def _running(argv: list[str], port: int, log: Path, env: Mapping[str, str] | None = None) -> Iterator[str]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(env or os.environ))
    try:
        _wait_listening(process, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def haproxy(servers: list[str], workdir: Path) -> Iterator[str]:
    """``deploy/haproxy/haproxy.cfg`` as it is: HAProxy reads the placeholders from its environment."""
    port = free_port()
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    config = DEPLOY / "haproxy" / "haproxy.cfg"
    subprocess.run(
        [binary, "-c", "-q", "-f", str(config)], check=True, env={**os.environ, **placeholders(servers, port)}
    )
    argv = [binary, "-db", "-f", str(config)]
    with _running(argv, port, workdir / "haproxy.log", {**os.environ, **placeholders(servers, port)}) as url:
        yield url


@contextlib.contextmanager
def nginx(servers: list[str], workdir: Path) -> Iterator[str]:
    """``deploy/nginx/nginx.conf`` rendered as its comment says, run in the foreground."""
    port = free_port()
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    config = workdir / "nginx.conf"
    config.write_text(render((DEPLOY / "nginx" / "nginx.conf").read_text(), placeholders(servers, port)))
    main = f"daemon off; pid {workdir / 'nginx.pid'}; error_log {workdir / 'error.log'} warn;"
    subprocess.run([binary, "-t", "-q", "-p", str(workdir), "-c", str(config), "-g", main], check=True)
    with _running([binary, "-p", str(workdir), "-c", str(config), "-g", main], port, workdir / "nginx.log") as url:
        yield url


PROXIES = {"haproxy": haproxy, "nginx": nginx}
