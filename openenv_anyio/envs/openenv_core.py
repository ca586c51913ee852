"""Serve an ``openenv-core`` environment unchanged: ``OpenEnvCoreEnv.wrap(MyEnvironment)``.

An ``openenv.core.env_server.interfaces.Environment`` subclass keeps its pydantic models:
a step's data is validated with its Action model (a refusal is a ``VALIDATION_ERROR`` the
environment never sees), and the Action instance is what its ``step`` receives; its
Observation is split into the frame's parts by the installed release's own
``serialize_observation`` (so the answer is the one upstream's server would send, with or
without ``metadata``); ``state`` is its State model dumped. The schemas are the models' ``model_json_schema()``.

The models are found, in this order, from :meth:`OpenEnvCoreEnv.wrap`'s arguments, the
generic parameters (``class MyEnv(Environment[MyAction, MyObservation, MyState])``) and the
annotations (``def step(self, action: MyAction) -> MyObservation``, ``def state(self) ->
MyState``); the Observation and State models default to openenv-core's base classes.

Like openenv-core's server: reset passes only the keyword arguments the environment's reset
accepts; an environment that overrides ``reset_async``/``step_async`` is awaited (the
adapter's method is then ``async def``), otherwise it is called synchronously (a server runs
it in a worker thread: ``NON_BLOCKING`` is False). ``SUPPORTS_CONCURRENT_SESSIONS = False``
(openenv-core's default) becomes ``MAX_CONCURRENT_SESSIONS = 1``: a server serves at most
one session of it at a time. openenv-core is imported only when an environment is wrapped.

An ``MCPEnvironment`` (tools from a FastMCP server) also gets ``list_tools()`` and
``call_tool(name, arguments)``, which a server serves over MCP: they go through the
environment's own ``step`` with upstream's ``ListToolsAction``/``CallToolAction`` (so its
mode-aware tools, timeouts and error categories apply), on the session's thread like every
other call. Its ``step`` always runs synchronously there (its ``step_async`` drives FastMCP on
asyncio, which is not the server's event loop), and its ``list_tools``/``call_tool`` step
actions stay valid actions.

An environment that declares upstream 0.10's ``set_state`` capability (``wrap(...,
set_state=True)``, as its manifest's ``capabilities.set_state: true`` says) accepts
``reset(injected_state=...)``: its episode is then kept by snapshot (``RESTORE_WAY =
SNAPSHOT``, see ``openenv_anyio.restoration``): :meth:`OpenEnvCoreEnv.snapshot` is its
State model dumped as JSON, and ``restore`` resets a fresh instance with that state
injected. The capability is the environment's promise that its dumped state is what its
``reset`` takes back; without it the adapter says ``NONE`` (a ``reset`` that merely accepts
any keyword proves nothing).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..core.jsonrpc import RpcCode, RpcFailure
from ..environment import TASK_METHODS, WEB_HOOKS, LiftedObservation, plain_reward
from ..restoration import RestoreFailed, RestoreWay, SnapshotFailed
from .errors import ActionRejected, EnvTargetError, json_pointer
from .jsonable import to_jsonable

__all__ = ["ActionModelUnknown", "OpenEnvCoreEnv", "is_openenv_core_environment"]

_CORE_INTERFACES = "openenv.core.env_server.interfaces"


class ActionModelUnknown(EnvTargetError):
    """An openenv-core environment names no Action model (``step(self, action: Any)``) and
    none was given."""


def _core_environment_class() -> Any:  # openenv-core's class (untyped), or None
    """openenv-core's ``Environment`` if the package is installed, else None."""
    try:
        from openenv.core.env_server.interfaces import Environment
    except ImportError:
        return None
    return Environment


def is_openenv_core_environment(candidate: Any) -> bool:
    """Whether ``candidate`` is an openenv-core ``Environment`` subclass.

    Imports nothing: a subclass exists only if its module imported openenv-core already.
    """
    import sys

    module = sys.modules.get(_CORE_INTERFACES)
    return module is not None and inspect.isclass(candidate) and issubclass(candidate, module.Environment)


class OpenEnvCoreEnv:
    """The protocol's environment API over one openenv-core environment instance.

    Use :meth:`wrap`: it returns a zero-argument subclass bound to one environment class
    (or factory), with its schemas, metadata and limits as class attributes.
    """

    NON_BLOCKING: bool = False
    #: At most this many sessions at once (None: no limit of the environment's own).
    MAX_CONCURRENT_SESSIONS: int | None = 1
    #: Where ``MAX_CONCURRENT_SESSIONS`` was declared, as the server's log and banner say it.
    SESSION_LIMIT_REASON: str | None = "an openenv-core environment without SUPPORTS_CONCURRENT_SESSIONS = True"
    #: Whether the stateless HTTP requests' environments hold a session slot (``HTTP-6``); an
    #: upstream app's do not, as in upstream's server.
    HTTP_REQUESTS_HOLD_SESSION_SLOTS: bool = True
    #: openenv-core's flag: every instance's calls must run on one shared thread.
    REQUIRES_SINGLE_THREAD_EXECUTOR: bool = False
    #: ``SNAPSHOT`` when the environment declares the ``set_state`` capability, else ``NONE``.
    RESTORE_WAY: RestoreWay = RestoreWay.NONE
    action_schema: Mapping[str, Any] | None = None
    observation_schema: Mapping[str, Any] | None = None
    state_schema: Mapping[str, Any] | None = None
    reset_observation_schema: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = {}
    action_model: Any = None
    observation_model: Any = None
    state_model: Any = None

    _factory: Callable[[], Any]
    #: a step's data (a dict) -> the Action instance (pydantic's ValidationError if invalid)
    _validate: Callable[[dict[str, Any]], Any]
    #: where the installed release puts an observation's metadata: see :func:`_upstream_split`
    _split: tuple[bool, bool] = (False, False)

    @classmethod
    def wrap(
        cls,
        env: Callable[[], Any],
        *,
        action_model: type | None = None,
        observation_model: type | None = None,
        state_model: type | None = None,
        reset_observation_model: type | None = None,
        name: str | None = None,
        max_concurrent_sessions: int | None = None,
        session_limit_reason: str | None = None,
        set_state: bool = False,
    ) -> type[OpenEnvCoreEnv]:
        """A zero-argument subclass serving ``env``, an Environment subclass or a factory of one.

        ``reset_observation_model`` is what upstream's ``create_app(...,
        reset_observation_cls=...)`` takes: the observation model of a reset when it differs
        from a step's (``GET /schema`` answers it as ``reset_observation``). ``name`` names the
        subclass (default: the environment class's name); ``max_concurrent_sessions`` is its
        session limit (upstream's ``max_concurrent_envs``; default: none when the class declares
        ``SUPPORTS_CONCURRENT_SESSIONS = True``, else 1) and ``session_limit_reason`` says where
        that limit was declared (the subclass's ``SESSION_LIMIT_REASON``, which the server's
        log and banner give when they name the limit). ``set_state`` declares upstream
        0.10's capability of that name: ``reset(injected_state=STATE)`` brings back the
        episode whose State model dumped is ``STATE`` (see the module docstring).

        Raises :class:`EnvTargetError` when openenv-core is missing, when ``env`` makes no
        openenv-core Environment, or when its Action model cannot be found.
        """
        core_environment = _core_environment_class()
        if core_environment is None:
            raise EnvTargetError(
                "serving an openenv-core environment needs openenv-core: pip install 'openenv-anyio[interop]'"
            )
        from openenv.core.env_server.types import Action, Observation, State

        env_class = _environment_class(env, core_environment)
        name = name or env_class.__name__
        action: Any = action_model or _pick(_model_candidates(env_class, core_environment, 0), Action)
        if action is None:
            raise ActionModelUnknown(
                f"cannot tell the Action model of {name}: annotate step(self, action: MyAction), "
                f"subclass Environment[MyAction, MyObservation, MyState], "
                f"or serve OpenEnvCoreEnv.wrap({name}, action_model=MyAction)"
            )
        observation: Any = (
            observation_model or _pick(_model_candidates(env_class, core_environment, 1), Observation) or Observation
        )
        reset_observation: Any = reset_observation_model or observation
        state: Any = state_model or _pick(_model_candidates(env_class, core_environment, 2), State) or State
        concurrent = bool(getattr(env_class, "SUPPORTS_CONCURRENT_SESSIONS", False))
        overridden_reset = env_class.reset_async is not core_environment.reset_async
        overridden_step = env_class.step_async is not core_environment.step_async
        attributes: dict[str, Any] = {
            "__module__": cls.__module__,
            "__qualname__": name,
            "__doc__": env_class.__doc__,
            "_factory": staticmethod(env),
            "MAX_CONCURRENT_SESSIONS": max_concurrent_sessions or (None if concurrent else 1),
            "SESSION_LIMIT_REASON": _session_limit_reason(max_concurrent_sessions, session_limit_reason, concurrent),
            # the wrapper's reset takes **kwargs and passes on what the env's own accepts
            "SEEDED": _takes_keyword(env_class.reset_async if overridden_reset else env_class.reset, "seed"),
            "REQUIRES_SINGLE_THREAD_EXECUTOR": bool(getattr(env_class, "REQUIRES_SINGLE_THREAD_EXECUTOR", False)),
            "action_model": action,
            "observation_model": observation,
            "state_model": state,
            "action_schema": action.model_json_schema(),
            "observation_schema": observation.model_json_schema(),
            "state_schema": state.model_json_schema(),
            "reset_observation_schema": reset_observation.model_json_schema(),
            "metadata": _class_metadata(env, env_class, core_environment),
            "_validate": staticmethod(_action_validator(action)),
            "_split": _upstream_split(),
            "reset": cls._reset_async if overridden_reset else cls._reset_sync,
            "RESTORE_WAY": RestoreWay.SNAPSHOT if set_state else RestoreWay.NONE,
            "step": cls._step_async if overridden_step else cls._step_sync,
        }
        for method in TASK_METHODS:  # the Task API (TASK-1): the env's own task methods, passed through
            own = getattr(env_class, method, None)
            if callable(own):
                attributes[method] = _task_method(method, inspect.iscoroutinefunction(own))
        if set_state:
            if "injected_state" not in (_keywords(env_class.reset) or {"injected_state"}):
                raise EnvTargetError(f"{name} declares set_state but its reset takes no injected_state")
            attributes["snapshot"] = cls._snapshot
            attributes["restore"] = cls._restore_async if overridden_reset else cls._restore_sync
        for hook in WEB_HOOKS:  # openenv 0.10's /web hooks, where the environment draws itself
            own = getattr(env_class, hook, None)
            if callable(own) and own is not getattr(core_environment, hook, None):
                attributes[hook] = getattr(cls, f"_{hook}")
        if _is_mcp_environment(env_class):
            attributes["list_tools"] = cls._list_tools
            attributes["call_tool"] = cls._call_tool
            attributes["action_schema"] = _with_tool_actions(action)
            # its step_async runs FastMCP on asyncio (not our trio loop): the sync step runs
            # the tools on the session's thread, in an event loop of their own
            attributes["step"] = cls._step_sync
        return type(name, (cls,), attributes)

    def __init__(self) -> None:
        if type(self) is OpenEnvCoreEnv:
            raise TypeError("OpenEnvCoreEnv is not served directly: use OpenEnvCoreEnv.wrap(MyEnvironment)")
        self._env = type(self)._factory()
        self._closed = False
        #: method name -> the keywords it accepts (None: any), learnt on its first call
        self._keywords: dict[str, frozenset[str] | None] = {}
        self.metadata = typing.cast(Mapping[str, Any], to_jsonable(self._env.get_metadata()))

    @property
    def env(self) -> Any:
        """The wrapped openenv-core environment."""
        return self._env

    def _reset_sync(self, **kwargs: Any) -> LiftedObservation:
        return _lifted(self._env.reset(**self._accepted("reset", kwargs)), self._split)

    async def _reset_async(self, **kwargs: Any) -> LiftedObservation:
        return _lifted(await self._env.reset_async(**self._accepted("reset_async", kwargs)), self._split)

    def _accepted(self, name: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The members of ``kwargs`` that the environment's method ``name`` accepts (all of
        them if it takes ``**kwargs``)."""
        try:
            keywords = self._keywords[name]
        except KeyError:
            keywords = self._keywords[name] = _keywords(getattr(self._env, name))
        if keywords is None:
            return dict(kwargs)
        return {key: value for key, value in kwargs.items() if key in keywords}

    def _snapshot(self) -> Any:
        """The episode: the environment's State model dumped as JSON (``set_state`` only)."""
        try:
            return to_jsonable(self._env.state)
        except Exception as exc:  # the environment's own state property failed
            raise SnapshotFailed(f"reading the state failed: {type(exc).__name__}: {exc}") from None

    def _restore_sync(self, snapshot: Any) -> None:
        """Reset with the kept state injected (upstream's ``set_state`` capability)."""
        try:
            self._env.reset(injected_state=snapshot)
        except Exception as exc:  # the environment refused the state
            raise RestoreFailed(f"reset(injected_state=...) failed: {type(exc).__name__}: {exc}") from None

    async def _restore_async(self, snapshot: Any) -> None:
        try:
            await self._env.reset_async(injected_state=snapshot)
        except Exception as exc:  # the environment refused the state
            raise RestoreFailed(f"reset_async(injected_state=...) failed: {type(exc).__name__}: {exc}") from None

    def _step_sync(self, action: Mapping[str, Any]) -> LiftedObservation:
        return _lifted(self._env.step(self.parse_action(action)), self._split)

    async def _step_async(self, action: Mapping[str, Any]) -> LiftedObservation:
        return _lifted(await self._env.step_async(self.parse_action(action)), self._split)

    def parse_action(self, data: Any) -> Any:
        """The Action model instance for a step's data; :class:`ActionRejected` if it does not validate.

        The result is exactly what upstream's server would pass: see :func:`_action_validator`.
        """
        if type(data) is not dict:  # a frame's data is a dict already: no copy then
            if not isinstance(data, Mapping):
                raise ActionRejected(f"expected an object, got {type(data).__name__}", keyword="type")
            data = dict(data)
        try:
            return self._validate(data)
        except _pydantic_errors()[0] as exc:  # evaluated only when something was raised
            raise _rejection(exc) from None

    def _render_web(self, observation: Mapping[str, Any]) -> str | None:
        """The environment's ``render_web`` (openenv 0.10): HTML drawing ``observation``."""
        drawing: str | None = self._env.render_web(dict(observation))
        return drawing

    def _web_actions(self, observation: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
        """The environment's ``web_actions`` (openenv 0.10): one-click ``(label, action)`` pairs;
        an Action model instance is given as the JSON object a step takes."""
        return [
            (str(label), action if isinstance(action, Mapping) else typing.cast(Mapping[str, Any], to_jsonable(action)))
            for label, action in self._env.web_actions(dict(observation))
        ]

    def _list_tools(self) -> list[dict[str, Any]]:
        """``tools/list`` of an MCPEnvironment: its tools as MCP lists them."""
        from openenv.core.env_server.mcp_types import ListToolsAction

        observation = self._env.step(ListToolsAction())
        failure = (observation.metadata or {}).get("error")
        if failure:
            raise RpcFailure(RpcCode.INTERNAL_ERROR, f"listing the tools failed: {failure}")
        return [
            {"name": tool.name, "description": tool.description, "inputSchema": to_jsonable(tool.input_schema)}
            for tool in observation.tools
        ]

    def _call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """``tools/call`` of an MCPEnvironment: the tool's result (FastMCP's CallToolResult as JSON).

        Raises :class:`RpcFailure`: -32602 for an unknown tool or bad arguments, -32603 when
        the tool raised or timed out.
        """
        from openenv.core.env_server.mcp_types import CallToolAction

        observation = self._env.step(CallToolAction(tool_name=name, arguments=dict(arguments)))
        error = observation.error
        if error is not None:
            kind = str(getattr(error.error_type, "value", error.error_type))
            code = RpcCode.INVALID_PARAMS if kind in ("tool_not_found", "invalid_args") else RpcCode.INTERNAL_ERROR
            raise RpcFailure(code, error.message, {"tool": name, "error_type": kind})
        return to_jsonable(_plain_result(observation.result))

    @property
    def state(self) -> Any:
        """The environment's State model, dumped: ``episode_id``, ``step_count`` and its own fields."""
        return to_jsonable(self._env.state)

    def close(self) -> None:
        """Close the environment (once; later calls do nothing)."""
        if not self._closed:
            self._closed = True
            self._env.close()


def _is_mcp_environment(env_class: type) -> bool:
    """Whether ``env_class`` is upstream's ``MCPEnvironment`` (a FastMCP server's tools)."""
    try:
        from openenv.core.env_server.mcp_environment import MCPEnvironment
    except ImportError:  # an upstream release without MCP, or without FastMCP installed
        return False
    return issubclass(env_class, MCPEnvironment)


def _with_tool_actions(action: Any) -> dict[str, Any]:
    """The action schema of an MCPEnvironment: its own actions, plus ``list_tools`` and
    ``call_tool`` where upstream's server routes them to the tools (its Action model is the
    generic base or an MCP action: ``deserialize_action`` decides the same way)."""
    from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
    from openenv.core.env_server.types import Action

    own = dict(action.model_json_schema())
    if action is not Action and action not in (CallToolAction, ListToolsAction):
        return own
    branches = [own, ListToolsAction.model_json_schema(), CallToolAction.model_json_schema()]
    definitions: dict[str, Any] = {}
    for branch in branches:
        definitions.update(branch.pop("$defs", {}))
    schema: dict[str, Any] = {"title": own.get("title", "Action"), "anyOf": branches}
    if definitions:
        schema["$defs"] = definitions
    return schema


def _plain_result(result: Any) -> Any:
    """FastMCP's CallToolResult (a dataclass) as a mapping of its fields; other values as they are."""
    import dataclasses

    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}
    return result


def _lifted(observation: Any, split: tuple[bool, bool]) -> LiftedObservation:
    """The observation frame's parts exactly as the installed upstream release's own server
    sends them (``split``, learnt by :func:`_upstream_split`: openenv 0.10 keeps ``metadata``
    inside ``observation`` and sends it beside it when non-empty; openenv-core 0.3 drops it),
    dumped in one pass by pydantic's JSON mode; a model holding values that mode cannot dump
    (numpy arrays) falls back to :func:`to_jsonable` (WS-OBS-2).

    Runs once per step, on the session's thread: the serializer is looked up in a plain dict
    (not ``functools.cache``), a reward that is already a frame's value skips
    :func:`plain_reward` (which returns it unchanged), and the tuple is built by
    ``tuple.__new__`` (a NamedTuple's ``__new__`` is a Python function): bench/README.md,
    "Server CPU per step".
    """
    inside, beside = split
    exclude = _EXCLUDE_KEEPING_METADATA if inside else _EXCLUDE
    model = type(observation)
    try:
        to_python = _json_dumps[model]
    except KeyError:
        to_python = _json_dumps[model] = _json_dump(model)
    try:
        if to_python is None:
            fields = observation.model_dump(mode="json", exclude=exclude)
        else:
            fields = to_python(observation, mode="json", exclude=exclude)
    except _pydantic_errors()[1]:
        fields = typing.cast(dict[str, Any], to_jsonable(observation.model_dump(exclude=exclude)))
    metadata = None
    if beside:
        metadata = fields.get("metadata") if inside else to_jsonable(getattr(observation, "metadata", None))
    reward = observation.reward
    if type(reward) not in _FRAME_REWARD_TYPES:
        reward = plain_reward(reward)
    return _new_tuple(LiftedObservation, (fields, reward, bool(observation.done), metadata or None))


# Sets, not frozensets: pydantic-core takes a set's members directly and converts any other
# collection on every call (bench/README.md, "Server CPU per step"). Never mutated.
_EXCLUDE: Final[set[str]] = {"reward", "done", "metadata"}
_EXCLUDE_KEEPING_METADATA: Final[set[str]] = {"reward", "done"}
#: the reward types a frame carries as they are (:func:`plain_reward` returns them unchanged)
_FRAME_REWARD_TYPES: Final = frozenset({float, int, bool, type(None)})
_new_tuple: Final = tuple.__new__
#: observation model -> its JSON-mode dump (:func:`_json_dump`); one entry per model class
_json_dumps: dict[type, Callable[..., Any] | None] = {}


def _json_dump(model: type) -> Callable[..., Any] | None:
    """The ``to_python`` of ``model``'s pydantic serializer when its ``model_dump`` is
    pydantic's own (which calls it with the same arguments, after a round of argument
    handling: bench/README.md, "Server CPU per step"), else None: a model that overrides
    ``model_dump`` is dumped through its override, as upstream's server does."""
    from pydantic import BaseModel

    if getattr(model, "model_dump", None) is not BaseModel.model_dump:
        return None
    serializer = getattr(model, "__pydantic_serializer__", None)
    return getattr(serializer, "to_python", None)


@functools.cache
def _upstream_split() -> tuple[bool, bool]:
    """Where the installed upstream release's ``serialize_observation`` puts an observation's
    metadata: (kept inside ``observation``, sent beside it). Learnt once from upstream itself."""
    from openenv.core.env_server.serialization import serialize_observation
    from openenv.core.env_server.types import Observation

    probe = serialize_observation(Observation(metadata={"probe": True}))
    return "metadata" in probe["observation"], "metadata" in probe


@functools.cache
def _pydantic_errors() -> tuple[type[Exception], type[Exception]]:
    """pydantic's ``ValidationError`` and ``PydanticSerializationError`` (pydantic comes with
    openenv-core; imported once, when the first environment runs)."""
    from pydantic import ValidationError
    from pydantic_core import PydanticSerializationError

    return ValidationError, PydanticSerializationError


def _action_validator(action: Any) -> Callable[[dict[str, Any]], Any]:
    """How a step's data becomes the Action instance upstream's server would pass.

    Upstream's ``deserialize_action`` routes ``list_tools``/``call_tool`` data to its MCP
    actions only when the Action model is the generic base or an MCP action; otherwise it is
    the model's ``model_validate``. So the model's own validator does the work for every
    other model (the same call ``model_validate`` makes, without its round of argument
    handling: bench/README.md, "Server CPU per step"), unless the model overrides
    ``model_validate``; upstream's function is kept wherever its routing can apply.
    """
    from openenv.core.env_server.serialization import deserialize_action
    from openenv.core.env_server.types import Action
    from pydantic import BaseModel

    try:
        from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
    except ImportError:  # a release without MCP actions
        mcp_actions: tuple[Any, ...] = ()
    else:
        mcp_actions = (CallToolAction, ListToolsAction)
    validator = getattr(action, "__pydantic_validator__", None)
    base_validate: Any = BaseModel.model_validate
    own_validation = getattr(action.model_validate, "__func__", None) is base_validate.__func__
    if action is Action or action in mcp_actions or not own_validation or validator is None:
        return functools.partial(deserialize_action, action_cls=action)
    return typing.cast(Callable[[dict[str, Any]], Any], validator.validate_python)


def _environment_class(env: Callable[[], Any], core_environment: Any) -> Any:
    target: Any = env
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isclass(target):
        if issubclass(target, core_environment):
            return target
        raise EnvTargetError(f"{target.__qualname__} is not an openenv-core Environment subclass")
    returned = _hints(target).get("return")
    if inspect.isclass(returned) and issubclass(returned, core_environment):
        return returned
    probe = env()  # an unannotated factory: make one instance to learn its class
    try:
        if not isinstance(probe, core_environment):
            raise EnvTargetError(
                f"{getattr(env, '__qualname__', env)!r} made a {type(probe).__name__}, not an openenv-core Environment"
            )
        return type(probe)
    finally:
        close = getattr(probe, "close", None)
        if callable(close):
            close()


def _hints(function: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception:  # unresolvable forward references: no usable hints
        return {}


def _model_candidates(env_class: Any, core_environment: Any, position: int) -> list[Any]:
    """Action (0), Observation (1) or State (2) models declared by generics and annotations."""
    found: list[Any] = []
    for klass in env_class.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if inspect.isclass(origin) and issubclass(origin, core_environment):
                args = typing.get_args(base)
                if len(args) == 3:
                    found.append(args[position])
    if position == 0:
        found.append(_hints(env_class.step).get("action"))
    elif position == 1:
        found += [_hints(env_class.step).get("return"), _hints(env_class.reset).get("return")]
    else:
        prop = inspect.getattr_static(env_class, "state", None)
        if isinstance(prop, property) and prop.fget is not None:
            found.append(_hints(prop.fget).get("return"))
    return found


def _pick(candidates: list[Any], base: type) -> type | None:
    """The first candidate that is a strict subclass of ``base``, else ``base`` if it was named."""
    models = [c for c in candidates if inspect.isclass(c) and issubclass(c, base)]
    specific = [model for model in models if model is not base]
    if specific:
        return specific[0]
    return models[0] if models else None


def _session_limit_reason(limit: int | None, given: str | None, concurrent: bool) -> str | None:
    """Where a wrapped environment's session limit comes from (:meth:`OpenEnvCoreEnv.wrap`)."""
    if limit:
        return given or f"max_concurrent_sessions={limit} given to OpenEnvCoreEnv.wrap"
    return None if concurrent else "an openenv-core environment without SUPPORTS_CONCURRENT_SESSIONS = True"


def _class_metadata(env: Callable[[], Any], env_class: Any, core_environment: Any) -> dict[str, Any]:
    """What ``get_metadata()`` says, without an instance unless the class overrides it."""
    if env_class.get_metadata is core_environment.get_metadata:
        name = env_class.__name__
        return {"name": name, "description": f"{name} environment", "version": "1.0.0"}
    probe = env()
    try:
        return typing.cast(dict[str, Any], to_jsonable(probe.get_metadata()))
    finally:
        probe.close()


def _keywords(method: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword names ``method`` accepts; None when it takes ``**kwargs``."""
    parameters = inspect.signature(method).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


def _task_method(name: str, is_async: bool) -> Callable[..., Any]:
    """A method calling the wrapped environment's task method ``name``, its answer as JSON values."""

    def forward(self: OpenEnvCoreEnv, *args: Any) -> Any:
        return to_jsonable(getattr(self._env, name)(*args))

    async def forward_async(self: OpenEnvCoreEnv, *args: Any) -> Any:
        return to_jsonable(await getattr(self._env, name)(*args))

    return forward_async if is_async else forward


def _takes_keyword(method: Callable[..., Any], name: str) -> bool:
    """Whether ``method`` accepts the keyword ``name`` (by name or by ``**kwargs``)."""
    keywords = _keywords(method)
    return keywords is None or name in keywords


def _rejection(exc: Any) -> ActionRejected:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    entries = [
        {
            "loc": list(error["loc"]),
            "msg": error["msg"],
            "type": error["type"],
            "pointer": json_pointer(error["loc"]),
        }
        for error in errors
    ]
    if not entries:
        return ActionRejected(str(exc), keyword="model")
    first = errors[0]
    return ActionRejected(first["msg"], loc=first["loc"], keyword=first["type"], errors=entries)
