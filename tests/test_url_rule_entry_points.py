"""One URL rule, end to end: ``demo --url`` and ``check`` given the agent channel's own URL
(``http://HOST:PORT/ws``, what ``serve`` prints as ``ws://HOST:PORT/ws``) reach the server,
as the client, ``compat`` and the TRL factory do (their tests: ``tests/client/test_urls.py``,
``tests/compat/test_third_party_calls.py``, ``tests/integrations/test_trl.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenv_anyio.cli import main
from openenv_anyio.envs.guess import GuessNumberEnv
from openenv_anyio.server import EnvServer, ServerConfig
from tests.demo.test_demo import demo, summary_rows


@pytest.fixture(scope="module")
def guess_url() -> Iterator[str]:
    with EnvServer(GuessNumberEnv, ServerConfig()).run_in_thread() as running:
        yield running.url


@pytest.mark.parametrize("form", ["http", "ws", "bare"])
def test_demo_takes_the_agent_channel_s_url(guess_url: str, form: str) -> None:
    channel = {"http": guess_url, "ws": "ws" + guess_url.removeprefix("http"), "bare": guess_url.split("://")[1]}[form]
    done = demo("--url", channel + "/ws", "--agents", "1", "--episodes", "1", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert summary_rows(done.stdout)["all"][-1] == "0"  # no agent errors


@pytest.mark.parametrize("form", ["http", "http/", "bare"])
def test_check_takes_the_agent_channel_s_url(guess_url: str, form: str, capsys: pytest.CaptureFixture[str]) -> None:
    channel = {"http": guess_url + "/ws", "http/": guess_url + "/ws/", "bare": guess_url.split("://")[1] + "/ws"}[form]
    assert main(["check", channel, "--only", "WS-CONN-01", "HTTP-01"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("PASSED")
