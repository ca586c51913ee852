"""Upstream OpenEnv 0.10's client API on our client: switch by changing one import.

    from openenv_anyio.compat import EnvClient        # was: from openenv.core import EnvClient
    from openenv_anyio.compat import MCPToolClient    # was: from openenv.core.mcp_client import ...

A typed client shipped in someone else's package is rebuilt on our base with one line:
``EchoEnv = adopt(EchoEnv)``. Every calling mode of upstream's clients works (awaited on
asyncio or trio, blocking with no loop, from worker threads, resolved when touched inside a
coroutine, ``with``, ``async with``, ``.sync()``), with our client's resume, exactly-once
steps and typed errors underneath. ``openenv`` need not be installed.
"""

from .adopt import adopt
from .env_client import EnvClient
from .generic_client import GenericAction, GenericEnvClient
from .mcp_client import MCPToolClient
from .modes import ModeMixed
from .observations import CallToolAction, CallToolObservation, ListToolsAction, ListToolsObservation, ToolEnvObservation
from .results import AutoAsyncResult, StepResult
from .state import State
from .sync_client import SyncEnvClient

#: upstream's name for the base of its tool clients
MCPClientBase = MCPToolClient

__all__ = [
    "AutoAsyncResult",
    "CallToolAction",
    "CallToolObservation",
    "EnvClient",
    "GenericAction",
    "GenericEnvClient",
    "ListToolsAction",
    "ListToolsObservation",
    "MCPClientBase",
    "MCPToolClient",
    "ModeMixed",
    "State",
    "StepResult",
    "SyncEnvClient",
    "ToolEnvObservation",
    "adopt",
]
