"""openenv-anyio: the OpenEnv environment protocol, spec first, on structured concurrency."""

from .core import ErrorCode, ProtocolError

__version__ = "0.1.0"

__all__ = ["ErrorCode", "ProtocolError", "__version__"]
