"""The environment API for authors, and the pure functions that read what an environment returns.

An environment is any object with ``reset(**kwargs)``, ``step(action)``, a ``state``
(property or zero-argument method) and optionally ``close()``; each may be sync or
``async def``. Subclassing :class:`Environment` is optional (duck typing is accepted).

What ``reset`` and ``step`` return is *observation-like*: a mapping, a dataclass instance or
a pydantic model. :func:`lift_observation` takes ``reward``, ``done`` and ``metadata`` out of
it (missing reward -> ``None``, missing done -> ``False``); the rest is the observation.

No I/O happens here: the server decides where and how the calls run.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol, TypeAlias

__all__ = [
    "EnvFactory",
    "Environment",
    "LiftedObservation",
    "SchemaLike",
    "TASK_METHODS",
    "TaskProvider",
    "WEB_HOOKS",
    "has_web_hooks",
    "web_view",
    "env_metadata",
    "is_model_class",
    "lift_observation",
    "normalise_state",
    "plain_reward",
    "schema_of",
    "takes_seed",
    "to_plain_dict",
]

#: A JSON Schema mapping, a pydantic model class, or ``None`` (nothing declared).
SchemaLike: TypeAlias = "Mapping[str, Any] | type | None"


class Environment:
    """Optional base class of an environment; every method may also be ``async def``.

    Class attributes:

    - ``NON_BLOCKING``: ``True`` promises that the sync methods never block (pure CPU work of
      well under a millisecond), so a server may call them inline on its event loop instead
      of hopping to the session's worker thread.
    - ``action_schema``, ``observation_schema``, ``state_schema``: a JSON Schema mapping, a
      pydantic model class, or ``None``. A declared action schema is enforced: an action that
      does not match it is refused before ``step`` sees it. When it is a pydantic model,
      ``step`` receives an instance of that model; otherwise it receives the JSON object.
    - ``reset_observation_schema``: the same, for the observation ``reset`` returns when it
      differs from a step's (``GET /schema`` answers ``observation_schema`` for it otherwise).
    - ``metadata``: ``name``, ``description``, ``version``, ... (``name`` defaults to the
      class name).
    - ``MAX_CONCURRENT_SESSIONS``: ``None`` (no limit of its own) or the most sessions the
      environment supports at once; a server caps ``max_concurrent_envs`` at it.
    - ``SEEDED``: whether ``reset`` applies the ``seed`` it is given: ``True``, ``False``, or
      ``None`` (the default) for "as its signature says": a ``seed`` parameter or ``**kwargs``
      takes it. An environment that takes a seed and ignores it says ``False``; validation
      telemetry reports it (``VAL-SEED-1``, :func:`takes_seed`).
    - ``DETERMINISTIC``: ``True`` promises that the same ``reset`` arguments and the same
      actions always give the same answers, so an episode can be brought back in another
      server process by replaying them (``openenv_anyio.restoration``; each replayed answer is
      checked against the recorded one).

    An environment may also define ``snapshot()`` (its episode as a JSON-able value or bytes)
    and ``restore(snapshot)``: the exact way back (``openenv_anyio.restoration``).

    Two optional methods serve the dashboard's playground (``/web``), as in OpenEnv 0.10:
    :meth:`render_web` draws an observation, :meth:`web_actions` offers one-click actions.
    """

    NON_BLOCKING: ClassVar[bool] = False
    action_schema: ClassVar[SchemaLike] = None
    observation_schema: ClassVar[SchemaLike] = None
    state_schema: ClassVar[SchemaLike] = None
    reset_observation_schema: ClassVar[SchemaLike] = None
    metadata: ClassVar[Mapping[str, Any]] = {}
    MAX_CONCURRENT_SESSIONS: ClassVar[int | None] = None
    SEEDED: ClassVar[bool | None] = None
    DETERMINISTIC: ClassVar[bool] = False

    def reset(self, **kwargs: Any) -> Any:
        """Start a new episode and return the first observation-like value."""
        raise NotImplementedError

    def step(self, action: Any) -> Any:
        """Apply one action and return an observation-like value."""
        raise NotImplementedError

    @property
    def state(self) -> Mapping[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and any extra keys."""
        raise NotImplementedError

    def close(self) -> None:
        """Release resources; called once when the session ends."""

    def render_web(self, observation: Mapping[str, Any]) -> str | None:
        """HTML that draws ``observation`` (a board, a page) in the dashboard's playground, or
        ``None`` to draw nothing. ``observation`` is the observation's members plus ``reward``
        and ``done``. The page shows the HTML in a sandboxed frame: no scripts, no requests,
        no access to the page or its token (``SECURITY.md``)."""
        return None

    def web_actions(self, observation: Mapping[str, Any]) -> Sequence[tuple[str, Mapping[str, Any]]]:
        """One-click actions for the playground, as ``(label, action)`` pairs (the legal
        moves of a game); each action is what ``step`` receives. Not asked once ``done``."""
        return []


class TaskProvider(Protocol):
    """The optional task methods of a dataset-backed environment (the Task API, ``TASK-1``).

    Declare any of them on the environment (sync or ``async def``); a server answers
    ``GET /{env}/splits``, ``POST /{env}/num_tasks``, ``/task``, ``/tasks`` and ``/task_range``
    from them, and 501 for a method the environment lacks or that raises
    ``NotImplementedError``. They read, never change the episode, and work on a freshly
    made instance (each request makes one). An unknown split raises ``KeyError``, an index
    out of range ``IndexError``. A task is chosen by the reset: ``reset(split=..., index=...,
    seed=...)``; the environment's reset takes those keywords.
    """

    def list_splits(self) -> list[Any]:
        """The splits: names (``"train"``) or ``{"name": ..., "type": ...}`` mappings."""
        ...

    def num_tasks(self, split: str) -> int:
        """How many tasks ``split`` holds."""
        ...

    def get_task(self, split: str, index: int) -> Any:
        """Task ``index`` (from 0) of ``split``, as JSON values."""
        ...

    def list_tasks(self, split: str) -> list[Any]:
        """The tasks of ``split`` (a bounded preview for a large split)."""
        ...

    def get_task_range(self, split: str, start: int | None, stop: int | None) -> list[Any]:
        """Tasks ``start`` to ``stop`` (excluded) of ``split``, as a slice takes them."""
        ...


#: The task methods a server looks for (:class:`TaskProvider`).
TASK_METHODS = ("list_splits", "num_tasks", "get_task", "list_tasks", "get_task_range")


#: A class or a zero-argument callable that builds one environment instance.
EnvFactory: TypeAlias = Callable[[], Any]


class LiftedObservation(NamedTuple):
    """An observation-like value split into the parts of an ``observation`` frame."""

    observation: dict[str, Any]
    reward: float | bool | None
    done: bool
    metadata: Any

    @property
    def sent_metadata(self) -> Mapping[str, Any] | None:
        """The metadata an observation frame carries (WS-OBS-2): a non-empty mapping, else None."""
        metadata = self.metadata
        if metadata is None:  # the usual case, without the abstract-class check
            return None
        return metadata if isinstance(metadata, Mapping) and metadata else None

    def frame_data(self) -> dict[str, Any]:
        """The ``data`` of the observation frame (and the HTTP ``/reset``, ``/step`` body)."""
        data: dict[str, Any] = {"observation": self.observation, "reward": self.reward, "done": self.done}
        metadata = self.sent_metadata
        if metadata is not None:
            data["metadata"] = metadata
        return data


_DATACLASS_TYPES: dict[type, bool] = {}
"""Whether instances of a type are dataclass instances, asked once per type (at most 1,024
remembered): for a pydantic model, ``dataclasses.is_dataclass`` is a failed attribute lookup
on its metaclass, an exception built and dropped, on every step (bench/README.md, "Server CPU
per step")."""


def _is_dataclass_type(cls: type) -> bool:
    known = _DATACLASS_TYPES.get(cls)
    if known is None:
        if len(_DATACLASS_TYPES) >= 1024:
            _DATACLASS_TYPES.clear()
        known = _DATACLASS_TYPES[cls] = dataclasses.is_dataclass(cls)
    return known


def to_plain_dict(value: Any) -> dict[str, Any]:
    """A shallow ``dict`` copy of a mapping, dataclass instance or pydantic model.

    Raises :class:`TypeError` for anything else. Nested values are left as they are (the
    encoder serialises numpy values, dataclasses and pydantic models).
    """
    if type(value) is dict:  # the usual observation: no abstract-class check
        return value.copy()
    if isinstance(value, Mapping):
        return dict(value)
    if _is_dataclass_type(type(value)):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()  # a new dict already: copied only when it is some other mapping
        return dumped if type(dumped) is dict else dict(dumped)
    raise TypeError(f"expected a mapping, a dataclass or a pydantic model, got {type(value).__name__}")


def plain_reward(reward: Any) -> float | bool | None:
    """A reward as the frame carries it: a number, a boolean or None (numpy scalars unwrapped)."""
    if reward is None or isinstance(reward, (bool, int, float)):
        return reward
    item = getattr(reward, "item", None)  # numpy scalars
    if callable(item):
        reward = item()
    if isinstance(reward, (bool, int, float)):
        return reward
    return float(reward)


def lift_observation(value: Any) -> LiftedObservation:
    """Split an observation-like value into observation, reward, done and metadata.

    ``None`` is an empty observation; a :class:`LiftedObservation` (an adapter that split it
    already, as its own server would) is taken as it is. Pure: no side effect, ``value`` is
    not modified.
    """
    if isinstance(value, LiftedObservation):
        return value
    fields = {} if value is None else to_plain_dict(value)
    reward = plain_reward(fields.pop("reward", None))
    done = bool(fields.pop("done", False))
    metadata = fields.pop("metadata", None)
    return LiftedObservation(fields, reward, done, metadata)


def normalise_state(value: Any) -> dict[str, Any]:
    """The ``data`` of a ``state`` frame from whatever an environment's ``state`` gave.

    ``episode_id`` defaults to ``None`` and ``step_count`` to 0; other keys are kept. Raises
    :class:`TypeError` when they have the wrong type (the frame would break the spec).
    """
    data = to_plain_dict(value)
    episode_id = data.setdefault("episode_id", None)
    step_count = data.setdefault("step_count", 0)
    if episode_id is not None and not isinstance(episode_id, str):
        raise TypeError(f"state episode_id must be a string or None, not {type(episode_id).__name__}")
    if isinstance(step_count, bool) or not isinstance(step_count, int) or step_count < 0:
        raise TypeError(f"state step_count must be an integer >= 0, not {step_count!r}")
    return data


def takes_seed(env: Any) -> bool:
    """Whether ``env`` (instance or class) applies the ``seed`` a reset gives it: its
    ``SEEDED`` when a boolean, else whether its ``reset`` has a ``seed`` parameter or takes
    ``**kwargs`` (a reset the server cannot inspect is taken at its word: ``True``)."""
    declared = getattr(env, "SEEDED", None)
    if isinstance(declared, bool):
        return declared
    reset = getattr(env, "reset", None)
    if not callable(reset):
        return False
    try:
        parameters = inspect.signature(reset).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is inspect.Parameter.VAR_KEYWORD or p.name == "seed" for p in parameters)


def schema_of(declared: Any) -> dict[str, Any] | None:
    """The JSON Schema of a declared schema: a mapping as is, a pydantic model's
    ``model_json_schema()``, ``None`` when nothing is declared."""
    if declared is None:
        return None
    if isinstance(declared, Mapping):
        return dict(declared)
    builder = getattr(declared, "model_json_schema", None)
    if callable(builder):
        return dict(builder())
    raise TypeError(f"a schema must be a JSON Schema mapping or a pydantic model, not {declared!r}")


def is_model_class(declared: Any) -> bool:
    """True when ``declared`` is a pydantic model class (has ``model_validate``)."""
    return isinstance(declared, type) and callable(getattr(declared, "model_validate", None))


def env_metadata(env_or_class: Any) -> dict[str, Any]:
    """The ``GET /metadata`` answer for an environment (class or instance)."""
    cls = env_or_class if isinstance(env_or_class, type) else type(env_or_class)
    declared = getattr(env_or_class, "metadata", None)
    declared = dict(declared) if isinstance(declared, Mapping) else {}
    name = str(declared.pop("name", None) or cls.__name__)
    answer: dict[str, Any] = {
        "name": name,
        "description": declared.pop("description", None) or f"{name} environment",
        "readme_content": declared.pop("readme_content", None),
        "version": declared.pop("version", None) or "1.0.0",
        "author": declared.pop("author", None),
        "documentation_url": declared.pop("documentation_url", None),
    }
    answer.update(declared)
    return answer


#: The optional methods an environment draws its observations with in the dashboard's playground.
WEB_HOOKS = ("render_web", "web_actions")


def has_web_hooks(env_or_class: Any) -> bool:
    """Whether an environment (class or instance) defines :meth:`Environment.render_web` or
    :meth:`Environment.web_actions` of its own (the base class's draw nothing)."""
    cls = env_or_class if isinstance(env_or_class, type) else type(env_or_class)
    return any(
        callable(getattr(cls, name, None)) and getattr(cls, name) is not getattr(Environment, name)
        for name in WEB_HOOKS
    )


def web_view(env: Any, data: Mapping[str, Any]) -> dict[str, Any]:
    """``{"html": str | None, "actions": [{"label", "action"}]}`` for the ``data`` of an
    observation frame, from the environment's web hooks (sync ones; missing ones give nothing).

    Raises :class:`TypeError` when a hook returns something else than it promises.
    """
    observation = data.get("observation")
    seen = {
        **(observation if isinstance(observation, Mapping) else {}),
        "reward": data.get("reward"),
        "done": bool(data.get("done")),
    }
    render = getattr(env, "render_web", None)
    html = render(seen) if callable(render) else None
    if html is not None and not isinstance(html, str):
        raise TypeError(f"render_web() must return a string or None, not {type(html).__name__}")
    offer = getattr(env, "web_actions", None)
    pairs = offer(seen) if callable(offer) and not seen["done"] else []
    actions = []
    for index, pair in enumerate(pairs or ()):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[1], Mapping):
            raise TypeError(f"web_actions() item {index} must be a (label, action object) pair, not {pair!r:.80}")
        actions.append({"label": str(pair[0]), "action": to_plain_dict(pair[1])})
    return {"html": html or None, "actions": actions}
