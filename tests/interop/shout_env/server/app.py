"""The app a Dockerfile would run with ``uvicorn shout_env.server.app:app``.

It serves :data:`MAX_SESSIONS` sessions at once. ``timed_app`` has an idle
timeout; ``production_app`` is built without the stateless routes (by hand, as openenv-core
0.3 offers it; 0.10's ``create_app`` also takes ``mode=``).
"""

from __future__ import annotations

import inspect

from openenv.core.env_server.http_server import HTTPEnvServer, create_app
from openenv.core.env_server.types import ConcurrencyConfig

from ..models import ShoutAction, ShoutObservation, ShoutState
from .shout_environment import ShoutEnvironment

MAX_SESSIONS = 2
#: openenv 0.10 publishes the State model it is given; openenv-core 0.3 always the base one
STATE = {"state_cls": ShoutState} if "state_cls" in inspect.signature(create_app).parameters else {}

app = create_app(
    ShoutEnvironment, ShoutAction, ShoutObservation, env_name="shout_env", max_concurrent_envs=MAX_SESSIONS, **STATE
)

#: the same environment with a (short) idle timeout, as an app built from a ConcurrencyConfig
timed_app = create_app(
    ShoutEnvironment,
    ShoutAction,
    ShoutObservation,
    env_name="shout_env",
    concurrency_config=ConcurrencyConfig(max_concurrent_envs=MAX_SESSIONS, session_timeout=1.0),
    **STATE,
)


def _production_app() -> object:
    from fastapi import FastAPI

    production = FastAPI()
    HTTPEnvServer(ShoutEnvironment, ShoutAction, ShoutObservation, max_concurrent_envs=MAX_SESSIONS).register_routes(
        production, mode="production"
    )
    return production


#: built as upstream's production servers are: no /reset, /step or /state
production_app = _production_app()
