"""Serve a Gymnasium environment unchanged: ``GymnasiumEnv("CartPole-v1")`` is an environment.

The protocol's calls map onto Gymnasium's API:

* ``reset(seed=None, episode_id=None, **options)`` -> ``env.reset(seed=seed, options=options)``,
  answered with ``{"observation", "info", "terminated": False, "truncated": False,
  "reward": None, "done": False}``;
* ``step({"action": VALUE})`` -> ``env.step(value)``, where VALUE is the JSON form of a
  member of the action space (an integer for Discrete, nested lists for Box, MultiDiscrete
  and MultiBinary, an object for Dict, a list for Tuple), answered with the observation,
  ``info``, ``terminated``, ``truncated``, ``reward`` and ``done = terminated or truncated``;
* ``state`` -> ``{"episode_id", "step_count", "env_id"}``.

A step before any reset first starts an unseeded episode (``reset()``), so that a fresh
environment can step, as openenv-core environments (ready after ``__init__``) can: the
stateless ``POST /step`` of ``HTTP-4`` steps a fresh environment.

With ``render_mode="rgb_array"`` every answer also carries ``frame``: the rendered image as
a PNG ``data:`` URL (a CartPole frame is a few kB this way, 3 MB as JSON arrays), which the
dashboard (``/web``) draws so a person can watch the episode.

Values go out as JSON (see ``jsonable``: arrays -> lists, numpy scalars -> numbers,
non-finite floats -> null). The schemas come from the spaces (see ``spaces``).

**Non-blocking rule.** ``NON_BLOCKING`` is True (calls run inline on the server's event
loop, no thread hop) when the environment's class lives in one of
:data:`NON_BLOCKING_MODULES` (Gymnasium's classic-control and toy-text environments: pure
Python/numpy, microseconds per step, no I/O) and it renders in none of the modes that draw
or wait (``render_mode`` None or ``"ansi"``). Anything else runs in a worker thread. The
``non_blocking`` argument overrides the rule either way.

**Snapshot rule.** An environment is brought back after a server restart by snapshot
(``RESTORE_WAY = SNAPSHOT``, see ``openenv_anyio.restoration``) when its class lives in one
of :data:`SNAPSHOT_MODULES` and it renders in none of the drawing modes: these hold their
whole episode in Python numbers, numpy arrays and their ``np_random`` generator, which pickle
and come back equal, and their wrappers (the time limit's step count included) pickle with
them. A renderer's window or surface does not pickle, and other environments (Box2D,
MuJoCo, anything holding a simulator or a process) may hold state that pickle does not
capture, so they say ``NONE``; the ``snapshots`` argument overrides the rule either way.
:meth:`GymnasiumEnv.snapshot` is the pickle of the wrapped environment and the episode's
id and step count; a pickle runs code when it is loaded, so a session store holding them
must be as private as the server's own code.
"""

from __future__ import annotations

import base64
import io
import pickle
import uuid
from collections.abc import Callable, Mapping
from typing import Any

try:
    import gymnasium
    import numpy  # noqa: F401  (Gymnasium's spaces hold numpy values; fail here, clearly, without it)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"openenv_anyio.envs.gymnasium needs Gymnasium and numpy ({exc}); "
        "install them with: pip install 'openenv-anyio[gym]'"
    ) from exc

from ..restoration import RestoreFailed, RestoreWay, SnapshotFailed
from .errors import ActionRejected
from .jsonable import to_jsonable
from .spaces import action_from_json, describe_space, space_schema

__all__ = [
    "NON_BLOCKING_MODULES",
    "SNAPSHOT_MODULES",
    "GymnasiumEnv",
    "png_data_url",
    "pickles_safely",
    "runs_without_blocking",
]

#: Modules whose environments never block (see the module docstring).
NON_BLOCKING_MODULES: tuple[str, ...] = ("gymnasium.envs.classic_control.", "gymnasium.envs.toy_text.")
#: Modules whose environments' episodes pickle whole (see the module docstring).
SNAPSHOT_MODULES: tuple[str, ...] = ("gymnasium.envs.classic_control.", "gymnasium.envs.toy_text.")
_QUIET_RENDER_MODES = (None, "ansi")
#: What a snapshot's pickle holds first: a snapshot of another layout is refused.
_SNAPSHOT_LAYOUT = "openenv-anyio.gymnasium.v1"

#: What a step's data may hold besides ``action`` (openenv-core typed actions carry ``metadata``).
_STEP_KEYS = frozenset({"action", "metadata"})

EnvSource = str | gymnasium.Env | Callable[..., gymnasium.Env]

STATE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0},
        "env_id": {"type": ["string", "null"]},
    },
    "required": ["episode_id", "step_count"],
}


def png_data_url(pixels: Any) -> str:
    """An RGB(A) array (height x width x 3 or 4, uint8) as a ``data:image/png;base64,`` URL."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def runs_without_blocking(env: gymnasium.Env) -> bool:
    """Whether ``env`` may run inline on an event loop, by the rule of the module docstring."""
    module = type(env.unwrapped).__module__ + "."
    return module.startswith(NON_BLOCKING_MODULES) and env.render_mode in _QUIET_RENDER_MODES


def pickles_safely(env: gymnasium.Env) -> bool:
    """Whether ``env``'s episode may be kept by pickle, by the rule of the module docstring."""
    module = type(env.unwrapped).__module__ + "."
    return module.startswith(SNAPSHOT_MODULES) and env.render_mode in _QUIET_RENDER_MODES


def _make(source: EnvSource, make_kwargs: Mapping[str, Any]) -> gymnasium.Env:
    if isinstance(source, str):
        return gymnasium.make(source, **make_kwargs)
    if isinstance(source, gymnasium.Env):
        if make_kwargs:
            raise TypeError("keyword arguments are for making an environment, not for an existing instance")
        return source
    env = source(**make_kwargs)
    if not isinstance(env, gymnasium.Env):
        raise TypeError(f"{source!r} made a {type(env).__name__}, not a gymnasium.Env")
    return env


class GymnasiumEnv:
    """One Gymnasium environment behind the protocol's reset/step/state/close.

    ``env`` is a registered id (made with ``gymnasium.make(env, **make_kwargs)``), a
    ``gymnasium.Env`` instance, or a callable (such as an ``Env`` subclass) called with
    ``make_kwargs``. A server wants a zero-argument factory: :meth:`bind` makes one.
    """

    NON_BLOCKING: bool = False
    #: Instances are independent: no limit of the environment's own on concurrent sessions.
    MAX_CONCURRENT_SESSIONS: int | None = None
    #: Gymnasium's ``reset(seed=...)`` seeds the environment's generator (``VAL-SEED-1``).
    SEEDED: bool = True
    action_schema: Mapping[str, Any] | None = None
    observation_schema: Mapping[str, Any] | None = None
    state_schema: Mapping[str, Any] | None = STATE_SCHEMA
    metadata: Mapping[str, Any] = {}

    #: How a session's episode comes back after a restart (see the module docstring).
    RESTORE_WAY: RestoreWay = RestoreWay.NONE

    def __init__(
        self,
        env: EnvSource,
        /,
        *,
        non_blocking: bool | None = None,
        snapshots: bool | None = None,
        **make_kwargs: Any,
    ) -> None:
        self._env = _make(env, make_kwargs)
        spec = self._env.spec
        self.env_id: str | None = env if isinstance(env, str) else (spec.id if spec is not None else None)
        self._episode_id: str | None = None
        self._step_count = 0
        self._needs_reset = True
        self._closed = False
        self.NON_BLOCKING = runs_without_blocking(self._env) if non_blocking is None else non_blocking
        pickles = pickles_safely(self._env) if snapshots is None else snapshots
        self.RESTORE_WAY = RestoreWay.SNAPSHOT if pickles else RestoreWay.NONE
        self._frames = self._env.render_mode == "rgb_array"
        self.action_schema = self.step_schema(self._env.action_space)
        self.observation_schema = self.reply_schema(self._env.observation_space, frames=self._frames)
        self.metadata = self._metadata()

    @classmethod
    def bind(
        cls,
        env: str | Callable[..., gymnasium.Env],
        /,
        *,
        non_blocking: bool | None = None,
        snapshots: bool | None = None,
        **make_kwargs: Any,
    ) -> type[GymnasiumEnv]:
        """A zero-argument subclass making ``env`` on each call: the factory a server wants.

        One probe instance is made (and closed) now, so that a bad id or a missing
        dependency fails here, and so that the schemas, metadata and ``NON_BLOCKING`` are
        class attributes a server can read without making an environment.
        """
        probe = cls(env, non_blocking=non_blocking, snapshots=snapshots, **make_kwargs)
        try:
            if probe._frames:
                # The first render imports the renderer's modules (pygame's surfarray for the
                # classic-control envs); sessions' threads doing that at once see a half-made
                # module, so it happens here, once.
                probe.reset(seed=0)
            attributes: dict[str, Any] = {
                "NON_BLOCKING": probe.NON_BLOCKING,
                "RESTORE_WAY": probe.RESTORE_WAY,
                "action_schema": probe.action_schema,
                "observation_schema": probe.observation_schema,
                "metadata": probe.metadata,
            }
        finally:
            probe.close()

        def __init__(self: GymnasiumEnv) -> None:
            cls.__init__(self, env, non_blocking=non_blocking, snapshots=snapshots, **make_kwargs)

        name = "".join(char if char.isalnum() else "_" for char in str(probe.metadata["name"]))
        attributes.update({"__init__": __init__, "__module__": cls.__module__, "__qualname__": name})
        return type(name, (cls,), attributes)

    @staticmethod
    def step_schema(action_space: gymnasium.Space[Any]) -> dict[str, Any]:
        """The JSON Schema of a step's data: ``{"action": <a member of action_space>}``."""
        return {
            "type": "object",
            "properties": {"action": space_schema(action_space), "metadata": {"type": "object"}},
            "required": ["action"],
            "additionalProperties": False,
        }

    @staticmethod
    def reply_schema(observation_space: gymnasium.Space[Any], *, frames: bool = False) -> dict[str, Any]:
        """The JSON Schema of the ``observation`` object of an answer (reward and done lifted out)."""
        properties: dict[str, Any] = {
            "observation": space_schema(observation_space, role="observation", nullable_floats=True),
            "info": {"type": "object"},
            "terminated": {"type": "boolean"},
            "truncated": {"type": "boolean"},
        }
        required = ["observation", "info", "terminated", "truncated"]
        if frames:
            properties["frame"] = {
                "type": "string",
                "pattern": "^data:image/png;base64,",
                "description": "the rendered image (render_mode='rgb_array') as a PNG data: URL",
            }
            required.append("frame")
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}

    def _answer(self, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` with the rendered frame when rendering to arrays."""
        if self._frames:
            reply["frame"] = png_data_url(self._env.render())
        return reply

    def _metadata(self) -> dict[str, Any]:
        spec = self._env.spec
        name = self.env_id or type(self._env.unwrapped).__name__
        return {
            "name": name,
            "description": (
                f"Gymnasium environment {name}: action space {describe_space(self._env.action_space)}, "
                f"observation space {describe_space(self._env.observation_space)}"
            ),
            "version": f"v{spec.version}" if spec is not None and spec.version is not None else None,
        }

    @property
    def env(self) -> gymnasium.Env:
        """The wrapped Gymnasium environment."""
        return self._env

    def reset(self, seed: int | None = None, episode_id: str | None = None, **options: Any) -> dict[str, Any]:
        """Start an episode; the reset's other members become Gymnasium's ``options``."""
        observation, info = self._env.reset(seed=seed, options=options or None)
        self._episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
        self._step_count = 0
        self._needs_reset = False
        return self._answer(
            {
                "observation": to_jsonable(observation),
                "info": to_jsonable(info),
                "terminated": False,
                "truncated": False,
                "reward": None,
                "done": False,
            }
        )

    def step(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """Take one step; ``action`` is the step's data, ``{"action": VALUE}``."""
        if not isinstance(action, Mapping) or "action" not in action:
            raise ActionRejected("'action' is a required property", keyword="required")
        unexpected = sorted(set(action) - _STEP_KEYS)
        if unexpected:
            raise ActionRejected(
                f"unexpected member {unexpected[0]!r}", loc=(unexpected[0],), keyword="additionalProperties"
            )
        value = action_from_json(self._env.action_space, action["action"])
        if self._needs_reset:  # a fresh environment: start an unseeded episode (HTTP-4)
            self.reset()
        observation, reward, terminated, truncated, info = self._env.step(value)
        self._step_count += 1
        done = bool(terminated) or bool(truncated)
        return self._answer(
            {
                "observation": to_jsonable(observation),
                "info": to_jsonable(info),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "reward": to_jsonable(float(reward)),
                "done": done,
            }
        )

    @property
    def state(self) -> dict[str, Any]:
        """``episode_id`` (None before the first reset), ``step_count`` and ``env_id``."""
        return {"episode_id": self._episode_id, "step_count": self._step_count, "env_id": self.env_id}

    def snapshot(self) -> bytes:
        """The episode as bytes: the pickle of the wrapped environment, its id and step count.

        Raises :class:`SnapshotFailed` when the environment does not snapshot (its
        ``RESTORE_WAY`` is not ``SNAPSHOT``) or does not pickle.
        """
        if self.RESTORE_WAY is not RestoreWay.SNAPSHOT:
            raise SnapshotFailed(f"{self.env_id or type(self._env.unwrapped).__name__} does not pickle safely")
        episode = (_SNAPSHOT_LAYOUT, self._env, self._episode_id, self._step_count, self._needs_reset)
        try:
            return pickle.dumps(episode, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # what pickling raises depends on the object it meets
            raise SnapshotFailed(f"the environment does not pickle: {type(exc).__name__}: {exc}") from None

    def restore(self, snapshot: bytes) -> None:
        """Bring back the episode :meth:`snapshot` kept (this instance's environment is closed
        and replaced). Raises :class:`RestoreFailed` for bytes that are not such a snapshot."""
        try:
            episode = pickle.loads(snapshot)  # the session store is trusted (module docstring)
        except Exception as exc:  # a truncated or foreign pickle raises almost anything
            raise RestoreFailed(f"the snapshot does not load: {type(exc).__name__}: {exc}") from None
        if not (isinstance(episode, tuple) and len(episode) == 5 and episode[0] == _SNAPSHOT_LAYOUT):
            raise RestoreFailed("the snapshot is not one of a Gymnasium environment")
        _, env, episode_id, step_count, needs_reset = episode
        if not isinstance(env, gymnasium.Env):
            raise RestoreFailed(f"the snapshot holds a {type(env).__name__}, not a gymnasium.Env")
        self._env.close()
        self._env, self._episode_id, self._step_count, self._needs_reset = env, episode_id, step_count, needs_reset

    def close(self) -> None:
        """Close the Gymnasium environment (once; later calls do nothing)."""
        if not self._closed:
            self._closed = True
            self._env.close()
