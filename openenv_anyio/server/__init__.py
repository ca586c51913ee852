"""The server: OpenEnv's ``/ws``, ``/ws/ui`` and HTTP endpoints on Quart-Trio + Hypercorn.

from openenv_anyio.server import EnvServer, ServerConfig

server = EnvServer(MyEnv, ServerConfig(port=0))
with server.run_in_thread() as running:
    print(running.url)          # http://127.0.0.1:PORT
"""

from .config import ServerConfig
from .env_server import EnvServer, RunningServer

__all__ = ["EnvServer", "RunningServer", "ServerConfig"]
