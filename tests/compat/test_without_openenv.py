"""``openenv_anyio.compat`` needs no upstream package: with ``openenv`` made unimportable, a
typed client still runs every mode against our server (its own StepResult and State)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.serve_process import serve_environment

from .envs import TinyEcho


def test_compat_runs_with_openenv_unimportable(ours_tiny: tuple[str, type[TinyEcho]]) -> None:
    url, _ = ours_tiny
    script = textwrap.dedent(
        """
        import sys
        sys.modules["openenv"] = None  # any import of upstream fails
        import asyncio
        from openenv_anyio.compat import EnvClient, State, StepResult, adopt

        class Tiny(EnvClient[dict, dict, State]):
            def _step_payload(self, action):
                return action

            def _parse_result(self, payload):
                return StepResult(payload["observation"], payload.get("reward"), payload["done"])

            def _parse_state(self, payload):
                return State(**payload)

        with Tiny(base_url=URL) as env:
            env.reset()
            blocking = env.step({"message": "abc"}).observation["message_length"]

        async def main():
            async with Tiny(base_url=URL) as env:
                await env.reset()
                length = (await env.step({"message": "abcd"})).observation["message_length"]
                return length, (await env.state()).step_count

        counts = asyncio.run(main())
        loaded = [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
        print(blocking, *counts, "openenv" not in loaded)
        try:
            Tiny.from_docker_image("image")
        except RuntimeError as exc:
            print("docker:", "install openenv" in str(exc))
        for use_docker in (True, False):  # from_env needs upstream's providers unless given one
            try:
                Tiny.from_env("org/tiny_env", use_docker=use_docker).sync()
            except RuntimeError as exc:
                print("from_env:", "install openenv" in str(exc) and "\\n" not in str(exc))
        """
    ).replace("URL", repr(url))
    done = subprocess.run(
        [sys.executable, "-c", script], env=serve_environment(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:4] == ["3 4 1 True", "docker: True", "from_env: True", "from_env: True"]
