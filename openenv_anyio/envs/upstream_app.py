"""Serve the app upstream's ``create_app`` built: ``openenv-anyio serve my_env.server.app:app``.

An env package written for upstream OpenEnv (``openenv-core`` 0.3, ``openenv`` 0.10) ends its
``server/app.py`` with ``app = create_app(MyEnv, MyAction, MyObservation,
max_concurrent_envs=4)`` (or ``create_fastapi_app``) and its Dockerfile runs ``uvicorn
my_env.server.app:app``. That app is a FastAPI application; everything it serves comes from
the one ``HTTPEnvServer`` its routes close over. :func:`read_upstream_app` finds that object
through public paths (the app's ``routes``, each route's ``endpoint`` and the cells of its
closure; ``HTTPEnvServer`` is upstream's public class) and reads what upstream declares:

- the Action, Observation and State models (``action_cls``, ``observation_cls``, and
  ``state_cls`` where the release has it: 0.3 publishes the base ``State``);
- the session limit (``max_concurrent_envs``) and the idle timeout
  (``concurrency_config.session_timeout``);
- the environment's name (``env_name``; 0.3 has none: the factory's name, as 0.10 defaults);
- the mode: an app built in production mode has no ``/step`` route.

The environment factory is the one value upstream keeps only privately (``_env_factory``,
the one private name read here); a release without it is a one-line error saying to serve
the environment class instead. :func:`served_factory` wraps it with
:class:`~openenv_anyio.envs.openenv_core.OpenEnvCoreEnv` under the declared models, so
``/schema`` shows them and an action they refuse is refused. Nothing of the FastAPI app runs.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import EnvTargetError

__all__ = ["UpstreamApp", "is_asgi_application", "read_upstream_app", "served_factory"]

_HTTP_SERVER_MODULE = "openenv.core.env_server.http_server"
#: how deep :func:`_held` looks into closures: a route's endpoint may close over a handler
#: that closes over the server (upstream's ``/reset`` route does)
_CLOSURE_DEPTH = 3


@dataclass(frozen=True)
class UpstreamApp:
    """What an app built by upstream's ``create_app`` declares about its environment."""

    factory: Any  #: the environment class or factory the app was given
    action_model: type
    observation_model: type
    #: the observation model of a reset (0.10's ``reset_observation_cls``; 0.3 has none: the
    #: observation model)
    reset_observation_model: type
    state_model: type
    max_concurrent_envs: int
    env_name: str
    session_timeout_s: float | None
    production: bool  #: built in production mode (no ``/reset``, ``/step``, ``/state``)
    release: str  #: the upstream distribution and version that built it, e.g. ``openenv 0.10.0``


def is_asgi_application(value: Any) -> bool:
    """Whether ``value`` looks like an ASGI application (an object whose ``__call__`` is
    ``async def``, or an ``async def app(scope, receive, send)``) rather than an environment."""
    if inspect.isclass(value):
        return False
    if inspect.iscoroutinefunction(value):
        try:
            positional = [
                parameter
                for parameter in inspect.signature(value).parameters.values()
                if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            return False
        return len(positional) == 3
    return callable(value) and inspect.iscoroutinefunction(type(value).__call__)


def read_upstream_app(app: Any, where: str) -> UpstreamApp | None:
    """What the upstream app ``app`` declares; None when no upstream ``HTTPEnvServer`` is
    behind it (not an app upstream built). :class:`EnvTargetError` when one is, but cannot
    be read (a release that keeps its factory elsewhere)."""
    module = sys.modules.get(_HTTP_SERVER_MODULE)
    routes = getattr(app, "routes", None)
    if module is None or not isinstance(routes, list):
        return None
    server_class = module.HTTPEnvServer
    server = next(
        (
            held
            for route in routes
            for held in _held(getattr(route, "endpoint", None))
            if isinstance(held, server_class)
        ),
        None,
    )
    if server is None:
        return None
    release = _release()
    factory = getattr(server, "_env_factory", None)
    if not callable(factory):
        raise EnvTargetError(
            f"{where} was built by {release}, whose HTTPEnvServer keeps no _env_factory: "
            f"serve the environment class instead (MODULE:MyEnvironment)"
        )
    from openenv.core.env_server.types import State

    config = server.concurrency_config
    timeout = config.session_timeout
    return UpstreamApp(
        factory=factory,
        action_model=server.action_cls,
        observation_model=server.observation_cls,
        reset_observation_model=getattr(server, "reset_observation_cls", None) or server.observation_cls,
        state_model=getattr(server, "state_cls", State),
        max_concurrent_envs=int(server.max_concurrent_envs),
        env_name=str(getattr(server, "env_name", None) or _factory_name(factory)),
        session_timeout_s=None if timeout is None else float(timeout),
        production=not any(getattr(route, "path", None) == "/step" for route in routes),
        release=release,
    )


def served_factory(app: UpstreamApp) -> type[Any]:
    """The environment factory our server serves for ``app``: its environment through the
    openenv-core adapter, under the app's models, name and session limit; its stateless
    HTTP requests hold no session slot, as upstream's do (``HTTP-6``)."""
    from .openenv_core import OpenEnvCoreEnv

    served = OpenEnvCoreEnv.wrap(
        app.factory,
        action_model=app.action_model,
        observation_model=app.observation_model,
        reset_observation_model=app.reset_observation_model,
        state_model=app.state_model,
        name=app.env_name,
        max_concurrent_sessions=app.max_concurrent_envs,
        session_limit_reason=f"max_concurrent_envs={app.max_concurrent_envs} in its create_app",
    )
    served.HTTP_REQUESTS_HOLD_SESSION_SLOTS = False  # upstream's stateless requests are no sessions (HTTP-6)
    return served


def _held(value: Any, depth: int = _CLOSURE_DEPTH) -> Iterator[Any]:
    """The values ``value`` (a function) closes over, and those of the functions among them."""
    function = getattr(value, "__func__", value)  # a bound method's function
    for cell in getattr(function, "__closure__", None) or ():
        try:
            held = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        yield held
        if depth > 1 and inspect.isfunction(held):
            yield from _held(held, depth - 1)


def _factory_name(factory: Any) -> str:
    """Upstream 0.10's default ``env_name``: the class's name, else the factory's ``__name__``."""
    return str(getattr(factory, "__name__", None) or "environment")


def _release() -> str:
    from importlib import metadata

    for distribution in ("openenv", "openenv-core"):
        try:
            return f"{distribution} {metadata.version(distribution)}"
        except metadata.PackageNotFoundError:
            continue
    return "upstream OpenEnv"
