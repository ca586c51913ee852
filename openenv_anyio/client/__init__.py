"""The anyio client: ``EnvClient`` for asyncio and trio, its results, errors and sync face.

async with EnvClient("http://127.0.0.1:8000") as env:
    result = await env.reset(seed=1)          # StepResult(observation, reward, done)
    result = await env.step({"message": "hi"})
    state = await env.state()                 # State(episode_id, step_count, extra)

with EnvClient(url).sync() as env:            # blocking, for scripts and threads
    env.reset(); env.step({"message": "hi"})

async with EnvPool([url_a, url_b]) as pool:   # many sessions over many servers
    pool.start_soon(agent, seed)              # agent(env, seed)
"""

from . import errors
from .env_client import EnvClient, State, StepResult, Tool
from .env_pool import EnvPool
from .errors import *  # noqa: F403  (the error hierarchy, listed in errors.__all__)
from .proxy import proxy_url_for
from .reconnect import ReconnectPolicy
from .sync import SyncEnvClient
from .urls import WebSocketAddress, http_base_url, websocket_address

__all__ = [
    "EnvClient",
    "EnvPool",
    "ReconnectPolicy",
    "State",
    "StepResult",
    "SyncEnvClient",
    "Tool",
    "WebSocketAddress",
    "proxy_url_for",
    "http_base_url",
    "websocket_address",
]
__all__ += errors.__all__  # the form type checkers read as a re-export
