"""``openenv-anyio serve MODULE:Env --action-model MODULE:Model``: an openenv-core
environment whose ``step(action: Any)`` names no Action model is served from the command
line with the model given, validated as ``OpenEnvCoreEnv.wrap(Env, action_model=Model)``
validates it; without the flag the error says to pass it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from serve_process import serve_environment, serve_process

TARGET = "untyped_core_env:Walker"
MODEL = "untyped_core_env:MoveAction"


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "serve", *args, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=serve_environment(),
    )


def test_without_the_flag_the_error_names_it() -> None:
    done = _serve(TARGET)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--action-model MODULE:Model" in done.stderr


def test_with_the_flag_the_env_is_served_validated_and_passes_the_kit() -> None:
    with serve_process(TARGET, "--action-model", MODEL) as served:
        with urllib.request.urlopen(served.url + "/schema", timeout=10) as response:
            schema = json.load(response)
        assert schema["action"]["title"] == "MoveAction" and "direction" in schema["action"]["required"]
        checked = subprocess.run(
            [sys.executable, "-m", "openenv_anyio", "check", served.url], capture_output=True, text=True, timeout=300
        )
        assert checked.returncode == 0, checked.stdout[-3000:]


def test_a_bad_action_model_is_one_line() -> None:
    for model, said in (
        ("untyped_core_env:NOT_A_MODEL", "not a pydantic model"),
        ("untyped_core_env:Nope", "has no attribute"),
        ("nowhere_module:X", "not found"),
    ):
        done = _serve(TARGET, "--action-model", model)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert said in done.stderr, done.stderr


def test_the_flag_is_refused_where_it_cannot_apply() -> None:
    done = _serve("openenv_anyio.envs.echo:EchoEnv", "--action-model", MODEL)
    assert done.returncode == 2 and "openenv-core" in done.stderr, done.stderr
    done = _serve(TARGET, "--action-model", MODEL, "--workers", "2")
    assert done.returncode == 2 and "--workers" in done.stderr, done.stderr


def test_the_readme_python_way_serves_the_same_env() -> None:
    readme = (Path(__file__).resolve().parent.parent / "docs" / "upstream.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "action_model=MyAction" in b)
    code = (
        block.replace("mypkg.models", "untyped_core_env")
        .replace("mypkg.server", "untyped_core_env")
        .replace("MyAction", "MoveAction")
        .replace("MyEnv", "Walker")
    )
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/upstream.md", "exec"), namespace)
    env_class: Any = namespace["Env"]
    assert env_class.action_schema["title"] == "MoveAction"
    env = env_class()
    env.reset()
    assert env.step({"direction": "right", "steps": 2}).observation == {"position": 2}
