"""Resolve a serve target (``MODULE:ATTR`` or ``gymnasium:ENV_ID``) into an environment factory.

* ``gymnasium:ENV_ID`` — any id registered with Gymnasium (``gymnasium:CartPole-v1``;
  ``gymnasium:pkg:Id-v0`` imports ``pkg`` first, as ``gymnasium.make`` does), served by
  :class:`~openenv_anyio.envs.gymnasium.GymnasiumEnv`.
* ``MODULE:ATTR`` — ATTR (a dotted path inside MODULE is fine) is an environment class or a
  zero-argument factory. An openenv-core ``Environment`` subclass (or a factory annotated to
  return one) is wrapped with :class:`~openenv_anyio.envs.openenv_core.OpenEnvCoreEnv`; a
  ``gymnasium.Env`` subclass with :class:`~openenv_anyio.envs.gymnasium.GymnasiumEnv`;
  anything else is returned as it is.
* ``MODULE:app`` where ``app`` is what upstream's ``create_app`` / ``create_fastapi_app``
  returned: its environment under the models, session limit and name it declares
  (:mod:`~openenv_anyio.envs.upstream_app`); :func:`resolve_serve_target` also tells what
  else the app declares (its mode, its idle timeout). Any other ASGI application is refused.

Every failure is an :class:`EnvTargetError` with a one-line message.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from .errors import EnvTargetError
from .upstream_app import UpstreamApp, is_asgi_application, read_upstream_app, served_factory

__all__ = ["EnvFactory", "EnvTargetError", "ServeTarget", "resolve_env_target", "resolve_serve_target"]

EnvFactory: TypeAlias = Callable[[], Any]


@dataclass(frozen=True)
class ServeTarget:
    """What a serve target names: the environment factory, and the upstream app it came from
    (None unless the target is an app built by upstream's ``create_app``)."""

    factory: EnvFactory
    app: UpstreamApp | None = None


_GYMNASIUM = "gymnasium"
_USAGE = "expected MODULE:ATTR (e.g. mypkg.server:MyEnv) or gymnasium:ENV_ID (e.g. gymnasium:CartPole-v1)"


def resolve_env_target(
    target: str,
    *,
    app_dir: str | None = ".",
    gymnasium_kwargs: Mapping[str, Any] | None = None,
    action_model: str | None = None,
) -> EnvFactory:
    """The environment factory that ``target`` names; :class:`EnvTargetError` if it names none.

    ``app_dir`` (default: the current directory, as uvicorn's ``--app-dir`` does) is put
    first on ``sys.path`` when it is not there yet, so that ``serve myenv:MyEnv`` finds
    ``myenv.py`` where the command runs even from an installed console script. ``None``
    leaves ``sys.path`` alone. ``gymnasium_kwargs`` go to ``gymnasium.make`` for a
    ``gymnasium:ENV_ID`` target (e.g. ``{"render_mode": "rgb_array"}``). ``action_model``
    (``MODULE:Model``, a pydantic model) is the Action model of an openenv-core environment
    whose ``step`` names none (``OpenEnvCoreEnv.wrap(Env, action_model=Model)``).
    """
    return resolve_serve_target(
        target, app_dir=app_dir, gymnasium_kwargs=gymnasium_kwargs, action_model=action_model
    ).factory


def resolve_serve_target(
    target: str,
    *,
    app_dir: str | None = ".",
    gymnasium_kwargs: Mapping[str, Any] | None = None,
    action_model: str | None = None,
) -> ServeTarget:
    """:func:`resolve_env_target`, with the upstream app the factory was read from (if any)."""
    module_name, colon, attribute_path = target.strip().partition(":")
    if not colon or not module_name or not attribute_path:
        raise EnvTargetError(f"bad environment target {target!r}: {_USAGE}")
    if app_dir is not None:
        directory = os.path.abspath(app_dir)
        if directory not in sys.path:
            sys.path.insert(0, directory)
    model = None if action_model is None else _action_model(action_model)
    if module_name == _GYMNASIUM:
        if model is not None:
            raise EnvTargetError(f"--action-model is for openenv-core environments, not {target}")
        return ServeTarget(_gymnasium_factory(attribute_path, gymnasium_kwargs or {}))
    module = _import(module_name)
    attribute = _attribute(module, module_name, attribute_path)
    where = f"{module_name}:{attribute_path}"
    if is_asgi_application(attribute):
        app = read_upstream_app(attribute, where)
        if app is None:
            raise EnvTargetError(
                f"{where} is an ASGI application ({type(attribute).__name__}) that upstream OpenEnv's "
                f"create_app did not build: serve the environment class or factory instead (MODULE:MyEnvironment)"
            )
        if model is not None:
            raise EnvTargetError(
                f"--action-model is for an environment class: {where} is an app whose create_app "
                "declares its Action model"
            )
        return ServeTarget(_built(lambda: served_factory(app), where), app)
    return ServeTarget(_factory(attribute, where, model))


def _action_model(text: str) -> Any:
    """The pydantic model ``MODULE:Model`` names (``--action-model``)."""
    module_name, colon, path = text.strip().partition(":")
    if not colon or not module_name or not path:
        raise EnvTargetError(f"bad --action-model {text!r}: expected MODULE:Model (a pydantic model)")
    model = _attribute(_import(module_name), module_name, path)
    from pydantic import BaseModel

    if not (inspect.isclass(model) and issubclass(model, BaseModel)):
        what = f"the class {model.__name__}" if inspect.isclass(model) else _a_value(model)
        raise EnvTargetError(f"--action-model {text} is {what}, not a pydantic model")
    return model


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == module_name or module_name.startswith(missing + "."):
            raise EnvTargetError(
                f"module {module_name!r} not found (is it installed, or on the Python path?)"
            ) from None
        raise EnvTargetError(f"importing {module_name!r} failed: {_one_line(exc)}") from exc
    except Exception as exc:
        raise EnvTargetError(f"importing {module_name!r} failed: {type(exc).__name__}: {_one_line(exc)}") from exc


def _attribute(module: Any, module_name: str, attribute_path: str) -> Any:
    value: Any = module
    walked: list[str] = []
    for part in attribute_path.split("."):
        if not hasattr(value, part):
            owner = module_name + "".join("." + name for name in walked)
            names = [name for name in dir(value) if not name.startswith("_")]
            close = difflib.get_close_matches(part, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise EnvTargetError(f"{owner!r} has no attribute {part!r}{hint}")
        value = getattr(value, part)
        walked.append(part)
    return value


#: how a value of a builtin type is named in a message
_PLAIN_NAMES = {
    int: "a whole number",
    float: "a number",
    bool: "a boolean",
    str: "a string",
    bytes: "bytes",
    list: "a list",
    tuple: "a tuple",
    dict: "a dict",
    set: "a set",
    type(None): "None",
}


def _a_value(value: Any) -> str:
    """``an int (42)``-style words for a value in a message: its kind and a short preview."""
    kind = type(value)
    if kind in _PLAIN_NAMES:
        shown = repr(value)
        scalar = kind in (int, float, bool, str, bytes)
        return f"{_PLAIN_NAMES[kind]} ({shown})" if scalar and len(shown) <= 40 else _PLAIN_NAMES[kind]
    name = kind.__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} instance"


def _factory(attribute: Any, where: str, action_model: Any = None) -> EnvFactory:
    from .openenv_core import ActionModelUnknown, OpenEnvCoreEnv, is_openenv_core_environment

    if not callable(attribute):
        hint = " (pass the class, not an instance)" if _is_environment_instance(attribute) else ""
        raise EnvTargetError(f"{where} is {_a_value(attribute)}, not an environment class or factory{hint}")
    if is_openenv_core_environment(_unwrap(attribute)) or is_openenv_core_environment(_return_class(attribute)):
        try:
            return _built(lambda: OpenEnvCoreEnv.wrap(attribute, action_model=action_model), where)
        except ActionModelUnknown as exc:
            raise EnvTargetError(f"{exc}; from the command line: --action-model MODULE:Model") from None
    if action_model is not None:
        raise EnvTargetError(
            f"--action-model is for openenv-core environments; {where} is not one (it declares its actions "
            "with action_schema, a JSON Schema or a pydantic model)"
        )
    gymnasium = sys.modules.get(_GYMNASIUM)
    if gymnasium is not None and inspect.isclass(attribute) and issubclass(attribute, gymnasium.Env):
        from .gymnasium import GymnasiumEnv

        env_class: Any = attribute
        return _built(lambda: GymnasiumEnv.bind(env_class), where)
    if inspect.isclass(attribute):
        missing = [name for name in ("reset", "step") if not callable(getattr(attribute, name, None))]
        if missing:
            raise EnvTargetError(
                f"{where} has no {' or '.join(missing)} method: an environment needs reset(**kwargs) and step(action)"
            )
    factory: EnvFactory = attribute
    return factory


def _unwrap(attribute: Any) -> Any:
    while isinstance(attribute, functools.partial):
        attribute = attribute.func
    return attribute


def _return_class(attribute: Any) -> Any:
    if inspect.isclass(attribute) or not callable(attribute):
        return None
    try:
        return inspect.signature(attribute, eval_str=True).return_annotation
    except Exception:  # unresolvable annotations: no usable hint
        return None


def _is_environment_instance(value: Any) -> bool:
    from .openenv_core import is_openenv_core_environment

    return is_openenv_core_environment(type(value)) or all(hasattr(value, name) for name in ("reset", "step"))


def _gymnasium_factory(env_id: str, make_kwargs: Mapping[str, Any]) -> EnvFactory:
    try:
        import gymnasium
    except ImportError:
        raise EnvTargetError(
            "serving a Gymnasium environment needs Gymnasium: pip install 'openenv-anyio[gym]'"
        ) from None
    from .gymnasium import GymnasiumEnv

    if ":" not in env_id and env_id not in gymnasium.registry:
        close = difflib.get_close_matches(env_id, list(gymnasium.registry), n=5, cutoff=0.5)
        hint = (
            f"; close matches: {', '.join(close)}"
            if close
            else "; gymnasium.pprint_registry() lists the registered ids"
        )
        raise EnvTargetError(f"Gymnasium has no environment {env_id!r}{hint}")
    return _built(lambda: GymnasiumEnv.bind(env_id, **make_kwargs), f"gymnasium:{env_id}")


def _built(build: Callable[[], EnvFactory], where: str) -> EnvFactory:
    """Run ``build`` (it may make a probe environment) with its failures as one-line errors."""
    try:
        return build()
    except EnvTargetError:
        raise
    except Exception as exc:
        raise EnvTargetError(f"cannot make {where}: {type(exc).__name__}: {_one_line(exc)}") from exc
