"""Upstream's own server (``uvicorn upstream_tool_app:app``, run in an upstream peer venv) for
:class:`upstream_tool_env.NotesEnvironment`, the way upstream's tool environments build theirs."""

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from upstream_tool_env import NotesEnvironment

app = create_app(NotesEnvironment, CallToolAction, CallToolObservation, env_name="notes")
