"""``docs/training.md`` runs as written, up to where a model is needed: its serve command
serves the environment it names, its script runs against that server (the class, the inline
dataset, a rollout by hand with the env's real reward), the class's tools are what TRL 1.16
would offer and describe, and the block that needs a model at least compiles with every name
it uses defined by the script before it.

TRL itself is not installed in the test venv: the only PyTorch wheel the package index
offers here is the CUDA build (with its nvidia-* and triton dependencies, gigabytes), and
TRL's ``GRPOTrainer`` imports torch at module level. TRL's own path is followed instead:
the trainer finds an instance's tools with ``inspect.getmembers(type(env),
predicate=inspect.isfunction)`` less ``reset``/``get_reward``, and describes them to the
model with ``transformers.utils.get_json_schema`` (what ``apply_chat_template(tools=...)``
calls), both run here on the generated class.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from transformers.utils import get_json_schema

from openenv_anyio.integrations.trl import close
from tests.serve_process import serve_environment, serve_process

from .test_trl import offered_by_trl

PAGE = Path(__file__).resolve().parents[2] / "docs" / "training.md"
TEXT = PAGE.read_text(encoding="utf-8")
#: the page marks a block that needs a model as the suite's snippet test reads marks: a
#: ``<!-- snippet: skip: REASON -->`` line right before the block
NEEDS_MODEL = "<!-- snippet: skip: "


def _blocks() -> list[tuple[bool, str, str]]:
    """(needs a model, language, code) of each fenced block, in page order."""
    found = []
    for fence in re.finditer(r"^```(\w+)\n(.*?)^```", TEXT, re.S | re.M):
        before = TEXT[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append((before.startswith(NEEDS_MODEL), fence.group(1), fence.group(2)))
    return found


BLOCKS = _blocks()
PYTHON = [(needs_model, code) for needs_model, language, code in BLOCKS if language == "python"]
BASH = [code for _, language, code in BLOCKS if language == "bash"]
SHOWN_URL = "http://127.0.0.1:8000"


def _serve_command() -> list[str]:
    (line,) = [line for block in BASH for line in block.splitlines() if line.startswith("openenv-anyio serve")]
    words = shlex.split(line)
    assert words[:2] == ["openenv-anyio", "serve"] and words[-2:] == ["--port", "8000"], line
    return words[2:-2]


def test_the_install_line_names_trl_1_16() -> None:
    (install,) = [line for block in BASH for line in block.splitlines() if line.startswith("pip install")]
    assert shlex.split(install)[2:] == ["openenv-anyio", "trl>=1.16"]


def test_the_page_s_script_runs_up_to_the_model(tmp_path: Path) -> None:
    (script,) = [code for needs_model, code in PYTHON if not needs_model and "environment_factory" in code]
    target, *options = _serve_command()
    with serve_process(target, *options) as served:
        path = tmp_path / "train_guess.py"
        path.write_text(script.replace(SHOWN_URL, served.url), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=serve_environment()
        )
    assert done.returncode == 0, done.stderr[-3000:]
    first, guessed, reward = done.stdout.splitlines()
    assert json.loads(first)["hint"] == "start"
    hint = json.loads(guessed)["hint"]
    assert hint in ("higher", "lower", "correct")
    assert float(reward) == (1.0 if hint == "correct" else -0.1)  # the step's reward, the env's own


def test_the_class_is_what_trl_offers_and_describes(tmp_path: Path) -> None:
    (script,) = [code for needs_model, code in PYTHON if not needs_model and "environment_factory" in code]
    target, *options = _serve_command()
    namespace: dict[str, object] = {"__name__": "train_guess"}
    with serve_process(target, *options) as served:
        exec(compile(script.replace(SHOWN_URL, served.url), "train_guess.py", "exec"), namespace)
        env = namespace["GuessNumber"]()  # type: ignore[operator]
        try:
            assert offered_by_trl(env) == ["step"]
            described = get_json_schema(env.step)["function"]
            assert described["parameters"]["properties"] == {"guess": {"type": "integer", "description": "Your guess."}}
            # the trainer renders each prompt with its instance's tools through the chat template
            rendered = _chat_template().apply_chat_template(
                rows_of(namespace)[0]["prompt"], tools=[env.step], tokenize=False
            )
            tool_line, user_line = rendered.splitlines()
            assert json.loads(tool_line.removeprefix("TOOL "))["function"] == described
            assert user_line.startswith("user: Find the secret number")
            rows = rows_of(namespace)
            assert len(rows) == 64 and set(rows[0]) == {"prompt", "seed"}
        finally:
            close(env)


def rows_of(namespace: dict[str, object]) -> list[dict[str, Any]]:
    rows = namespace["rows"]
    assert isinstance(rows, list)
    return rows


def _chat_template() -> Any:
    """A tokenizer built here (no download) whose chat template renders tools one JSON line each."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]")), unk_token="[UNK]"
    )
    tokenizer.chat_template = (
        "{% for tool in tools %}TOOL {{ tool | tojson }}\n{% endfor %}"
        "{% for message in messages %}{{ message.role }}: {{ message.content }}\n{% endfor %}"
    )
    return tokenizer


def test_the_model_block_is_marked_and_uses_only_the_script_s_names() -> None:
    (training,) = [code for needs_model, code in PYTHON if needs_model]
    (script,) = [code for needs_model, code in PYTHON if not needs_model and "environment_factory" in code]
    defined = {node.id for node in ast.walk(ast.parse(script + training)) if isinstance(node, ast.Name)}
    used = {node.id for node in ast.walk(ast.parse(training)) if isinstance(node, ast.Name)}
    assert {"rows", "GuessNumber"} <= used <= defined | {"Dataset", "GRPOConfig", "GRPOTrainer"}
    assert "reward_funcs" not in training  # get_reward is the reward source


def test_the_tools_only_example_env_scores_through_its_reward_tool() -> None:
    from openenv_anyio.integrations.trl import environment_factory
    from openenv_anyio.server import EnvServer, ServerConfig

    (source,) = [code for _, code in PYTHON if "class Tally" in code]
    namespace: dict[str, object] = {"__name__": "tally_page"}
    exec(compile(source, "tally_page.py", "exec"), namespace)
    with EnvServer(namespace["Tally"], ServerConfig()).run_in_thread() as running:  # type: ignore[arg-type]
        env = environment_factory(running.url)()
        try:
            assert offered_by_trl(env) == ["add"]
            env.reset(seed=2)
            env.add(amount=2)
            assert env.get_reward() == 1.0 and env.reward is None
        finally:
            close(env)
