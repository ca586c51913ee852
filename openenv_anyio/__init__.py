"""openenv-anyio: the OpenEnv environment protocol, spec first, on structured concurrency.

The public names below are imported when first used (PEP 562), so that ``openenv-anyio``
starts its command line before anything heavy is imported: a Ctrl-C in its first instant
then finds the command's own handler (exit 130, no import traceback).
"""

# ``typing`` is not imported here for the same reason; type checkers read the names below
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .client import (
        CapacityReached,
        ConnectError,
        ConnectionClosedByServer,
        ConnectionDropped,
        ConnectionLost,
        ConnectionRefused,
        ConnectTimeout,
        EnvClient,
        EnvClientError,
        EnvExecutionError,
        EnvFactoryError,
        EnvPool,
        EpisodeMismatch,
        HandshakeRejected,
        InvalidJsonError,
        MessageTimeout,
        MessageTooLarge,
        NotConnected,
        ProtocolViolation,
        ProxyRejected,
        ReconnectPolicy,
        ReplayMismatch,
        RequestIdReused,
        RequestValidationError,
        ResumeFailed,
        RpcEpisodeMismatch,
        RpcError,
        RpcInvalidParams,
        RpcInvalidRequest,
        RpcMethodNotFound,
        RpcParseError,
        RpcServerError,
        ServerBusy,
        ServerError,
        ServerMessageTooLarge,
        SessionError,
        SessionNotFound,
        State,
        StepResult,
        SyncEnvClient,
        Tool,
        ToolFailed,
        UnknownTypeError,
        UsedAfterFork,
        ValidationRefused,
        WebSocketAddress,
        http_base_url,
        proxy_url_for,
        websocket_address,
    )
    from .core import ErrorCode, ProtocolError
    from .environment import Environment

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "CapacityReached",
    "ConnectError",
    "ConnectionClosedByServer",
    "ConnectionDropped",
    "ConnectionLost",
    "ConnectionRefused",
    "ConnectTimeout",
    "EnvClient",
    "EnvClientError",
    "EnvExecutionError",
    "EnvFactoryError",
    "Environment",
    "EnvPool",
    "EpisodeMismatch",
    "ErrorCode",
    "HandshakeRejected",
    "http_base_url",
    "InvalidJsonError",
    "MessageTimeout",
    "MessageTooLarge",
    "NotConnected",
    "ProtocolError",
    "ProtocolViolation",
    "proxy_url_for",
    "ProxyRejected",
    "ReconnectPolicy",
    "ReplayMismatch",
    "RequestIdReused",
    "ServerBusy",
    "RequestValidationError",
    "ResumeFailed",
    "RpcEpisodeMismatch",
    "RpcError",
    "RpcInvalidParams",
    "RpcInvalidRequest",
    "RpcMethodNotFound",
    "RpcParseError",
    "RpcServerError",
    "ServerError",
    "ServerMessageTooLarge",
    "SessionError",
    "SessionNotFound",
    "State",
    "StepResult",
    "SyncEnvClient",
    "Tool",
    "ToolFailed",
    "UnknownTypeError",
    "UsedAfterFork",
    "ValidationRefused",
    "websocket_address",
    "WebSocketAddress",
]


def __getattr__(name: str) -> object:
    """A public name, imported on first use from the subpackage that defines it."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import client, core, environment

    for module in (client, core, environment):
        if name in module.__all__:
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")  # listed but defined nowhere


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
