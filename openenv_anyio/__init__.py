"""openenv-anyio: the OpenEnv environment protocol, spec first, on structured concurrency."""

from . import client
from .client import *  # noqa: F403  (EnvClient, StepResult, State, SyncEnvClient, the errors)
from .core import ErrorCode, ProtocolError
from .environment import Environment

__version__ = "0.1.0"

__all__ = ["Environment", "ErrorCode", "ProtocolError", "__version__", *client.__all__]
