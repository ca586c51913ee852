"""Shared test configuration: the upstream OpenEnv peers (see ``tests/upstream_peers.py``), and
SIGINT given back its usual effect for the children the tests start."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.upstream_peers import Peer, template_env, with_session_limit

# Tests that send SIGINT to a child process expect Ctrl-C's usual effect there. A suite started
# as a background job of a non-interactive shell (`pytest ... &`) inherits SIGINT ignored, and
# an ignored signal stays ignored across exec: every child would then ignore it too. The test
# processes take Python's own handler back, so their children start with the default action.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def upstream_template(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``upstream_template(peer, max_concurrent_envs=None)``: the folder of the env that the
    peer's ``openenv init tiny_env`` generates (once per peer and limit in a test run)."""
    made: dict[tuple[str, int | None], Path] = {}

    def get(peer: Peer, max_concurrent_envs: int | None = None) -> Path:
        key = (peer.name, max_concurrent_envs)
        if key not in made:
            if max_concurrent_envs is None:
                made[key] = template_env(peer, tmp_path_factory.mktemp(f"{peer.name}-template"))
            else:
                made[key] = with_session_limit(
                    get(peer), tmp_path_factory.mktemp(f"{peer.name}-max{max_concurrent_envs}"), max_concurrent_envs
                )
        return made[key]

    return get
