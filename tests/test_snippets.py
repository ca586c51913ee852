"""Every code block of the README and of every user-guide page under docs/ runs as copied.

Python blocks are run, each on its own, as a script in a folder holding the guide's files
(a block whose first line is ``# NAME.py`` is also written there as NAME.py, so that
``openenv-anyio serve mygame:Counter`` and ``from mygame import Counter`` find it). A block
that talks to a server says which one, and a block that cannot run here says why, each in
an HTML comment on the line before the block (invisible on GitHub and in the built guide)::

    <!-- snippet: against mygame:Counter -->          a server of that target, started on a
                                                      free loopback port; every
                                                      http://HOST:8000 of the block is its URL
    <!-- snippet: against mygame:Counter token -->    the same, requiring $OPENENV_TOKEN
                                                      (set for the block)
    <!-- snippet: skip: needs a GPU and a model -->   not run; the reason is required

Shell blocks: every ``openenv-anyio ...`` command line is parsed by the real command line
(a flag that drifted fails), and every ``pip install`` extra exists in pyproject.toml. A
shell block marked ``run`` (or ``run against TARGET``, with a server as above) also runs
its ``openenv-anyio`` commands, but ``serve`` (which runs until stopped), and each must
exit 0; installing (``pip``, ``python3 -m venv``) is never run, for it would change the
test's own environment. A block whose language is neither (text, output, a synopsis) is
not code.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openenv_anyio.cli import build_parser
from openenv_anyio.envs.loading import resolve_env_target
from openenv_anyio.server import EnvServer, ServerConfig

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOKEN = "snippet-token-0123456789abcdef"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_MARK = re.compile(r"^<!-- snippet: (.*) -->$")
_SHOWN_URL = re.compile(r"https?://[\w.-]+:8000")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    mark: str  # the text of the snippet comment before it, or ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file_name(self) -> str | None:
        found = re.match(r"# (\w+\.py)\n", self.code)
        return found.group(1) if found else None


def _blocks() -> list[Block]:
    found = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for fence in _FENCE.finditer(text):
            before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mark = _MARK.match(before)
            found.append(
                Block(
                    page=str(path.relative_to(ROOT)),
                    line=text.count("\n", 0, fence.start()) + 1,
                    language=fence.group(1),
                    code=fence.group(2),
                    mark=mark.group(1).strip() if mark else "",
                )
            )
    return found


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.language == "python"]
SHELL = [b for b in BLOCKS if b.language in ("bash", "sh", "shell", "console")]


@pytest.fixture(scope="module")
def guide_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with every ``# NAME.py`` block of the README and the guide."""
    folder = tmp_path_factory.mktemp("guide")
    for block in PYTHON:
        if block.file_name is not None:
            (folder / block.file_name).write_text(block.code, encoding="utf-8")
    return folder


@contextlib.contextmanager
def _served(target: str, folder: Path, token: str | None) -> Iterator[str]:
    factory = resolve_env_target(target, app_dir=str(folder))
    with EnvServer(factory, ServerConfig(port=0, token=token)).run_in_thread() as running:
        yield running.url


def test_every_page_is_read_and_every_mark_is_known() -> None:
    assert {b.page for b in PYTHON} >= {"README.md", "docs/client.md", "docs/serving.md"}
    for block in BLOCKS:
        assert block.mark == "" or re.fullmatch(
            r"against [\w.]+:[\w.-]+( token)?|run( against [\w.]+:[\w.-]+)?|skip: \S.*", block.mark
        ), block.id


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_a_python_block_runs_as_copied(block: Block, guide_files: Path, tmp_path: Path) -> None:
    if block.mark.startswith("skip: "):
        pytest.skip(block.mark.removeprefix("skip: "))  # the page says why beside the block
    script = tmp_path / "snippet.py"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(guide_files), str(ROOT)])}
    if block.mark.startswith("against "):
        target, *flags = block.mark.removeprefix("against ").split()
        token = TOKEN if "token" in flags else None
        if token:
            environment["OPENENV_TOKEN"] = token
        with _served(target, guide_files, token) as url:
            script.write_text(_SHOWN_URL.sub(url, block.code), encoding="utf-8")
            done = _run_script(script, guide_files, environment)
    else:
        assert not _SHOWN_URL.search(block.code), f"{block.id} talks to a server: mark it 'against TARGET'"
        script.write_text(block.code, encoding="utf-8")
        done = _run_script(script, guide_files, environment)
    assert done.returncode == 0, f"{block.id}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def _run_script(script: Path, cwd: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=cwd, env=environment
    )


def _command_lines(code: str) -> Iterator[list[str]]:
    """Each shell command of a block, as words (continuations joined, comments dropped)."""
    for line in code.replace("\\\n", " ").splitlines():
        for command in re.split(r"&&|\|\||;|\||&", line.split(" #")[0]):
            words = shlex.split(command, comments=True)
            if words:
                yield words


EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])


@pytest.mark.parametrize("block", SHELL, ids=[b.id for b in SHELL])
def test_a_shell_block_names_real_flags_and_extras(block: Block, guide_files: Path) -> None:
    if block.mark.startswith("skip: "):
        pytest.skip(block.mark.removeprefix("skip: "))
    target = block.mark.removeprefix("run against ") if block.mark.startswith("run against ") else None
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(_served(target, guide_files, None)) if target else None
        for words in _command_lines(block.code):
            program = Path(words[0]).name
            if program == "openenv-anyio":
                try:
                    build_parser().parse_args(words[1:])
                except SystemExit as exit:
                    assert exit.code == 0, f"{block.id}: {shlex.join(words)} does not parse"
                if block.mark.startswith("run") and words[1:2] != ["serve"]:
                    args = [_SHOWN_URL.sub(url, word) if url else word for word in words[1:]]
                    done = subprocess.run(
                        [sys.executable, "-m", "openenv_anyio", *args],
                        capture_output=True,
                        text=True,
                        timeout=600,
                        cwd=guide_files,
                        stdin=subprocess.DEVNULL,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(guide_files), str(ROOT)])},
                    )
                    assert done.returncode == 0, (
                        f"{block.id}: {shlex.join(words)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
                    )
            for word in words:
                for extras in re.findall(r"\[([\w,-]+)\]", word) if program.startswith("pip") else []:
                    assert set(extras.split(",")) <= EXTRAS, f"{block.id}: {word}: no such extra"
