"""Upstream's own server (``uvicorn scored_app:app`` in the upstream peer venv) for
:class:`scored_env.TallyEnvironment`, built the way upstream's tool environments build theirs."""

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from scored_env import TallyEnvironment

app = create_app(TallyEnvironment, CallToolAction, CallToolObservation, env_name="tally", max_concurrent_envs=8)
