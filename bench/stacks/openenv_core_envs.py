"""The bench envs of ``bench.envs`` as openenv-core ``Environment`` subclasses.

Imported only inside OpenEnv server processes. Each wrapper delegates to the plain class so
both stacks run the same environment logic; pydantic Action/Observation models give
openenv-core what it needs to validate and serialise.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from bench.envs import ENV_KINDS, AsyncEchoEnv, EchoEnv


class EchoAction(Action):
    message: str = ""


class EchoObservation(Observation):
    echoed: str = ""
    length: int = 0
    pad: str = ""


def _to_observation(values: dict[str, Any]) -> EchoObservation:
    return EchoObservation(**values)


class SyncWrapper(Environment[EchoAction, EchoObservation, State]):
    """A sync openenv-core env around one plain bench env (OpenEnv hops each call to a thread)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    logic_cls: type[EchoEnv] = EchoEnv

    def __init__(self) -> None:
        super().__init__()
        self._logic = self.logic_cls()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        return _to_observation(self._logic.reset(seed=seed, episode_id=episode_id, **kwargs))

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        return _to_observation(self._logic.step(action.model_dump()))

    @property
    def state(self) -> State:
        return State(**self._logic.state)

    def close(self) -> None:
        self._logic.close()


class AsyncWrapper(SyncWrapper):
    """The async echo: openenv-core awaits ``reset_async``/``step_async`` on its loop."""

    logic_cls = AsyncEchoEnv

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        raise NotImplementedError("served through reset_async")

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        raise NotImplementedError("served through step_async")

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> EchoObservation:
        logic: AsyncEchoEnv = self._logic  # type: ignore[assignment]
        return _to_observation(await logic.reset(seed=seed, episode_id=episode_id, **kwargs))

    async def step_async(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        logic: AsyncEchoEnv = self._logic  # type: ignore[assignment]
        return _to_observation(await logic.step(action.model_dump()))


def _sync_wrapper(kind: str) -> type[SyncWrapper]:
    """A ``SyncWrapper`` subclass around ``ENV_KINDS[kind]``, named after it."""
    logic = ENV_KINDS[kind]
    return type(f"OpenEnv{logic.__name__}", (SyncWrapper,), {"logic_cls": logic})


#: env kind -> (Environment subclass, Action model, Observation model). OpenEnv has no inline
#: mode: "echo_inline" is the plain sync echo there, run its only way (a thread hop).
OPENENV_KINDS: dict[str, tuple[type[Environment[Any, Any, Any]], type[Action], type[Observation]]] = {
    "echo": (_sync_wrapper("echo"), EchoAction, EchoObservation),
    "echo_inline": (_sync_wrapper("echo"), EchoAction, EchoObservation),
    "echo_async": (AsyncWrapper, EchoAction, EchoObservation),
    "sleep": (_sync_wrapper("sleep"), EchoAction, EchoObservation),
    "big": (_sync_wrapper("big"), EchoAction, EchoObservation),
}


class OwnApiModelEnv:
    """An environment of OpenEnv's kind written in our own env API, with the same models.

    ``action_schema`` is the Action model: our server checks the action against its JSON
    Schema and validates it into an instance on its loop; ``step`` is the OpenEnv side's
    environment's own (it builds the Observation model), on the session's thread; the server
    dumps the returned model. So it does the pydantic work of that environment served through
    our adapter (``OpenEnvCoreEnv.wrap``), without the adapter: served side by side, the two
    separate the adapter's cost from the models' (scenario 10).
    """

    NON_BLOCKING: bool = False
    env_class: type[SyncWrapper] = SyncWrapper
    action_schema: type[Action] = EchoAction

    def __init__(self) -> None:
        self._env = self.env_class()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        return self._env.reset(seed=seed, episode_id=episode_id, **kwargs)

    def step(self, action: Action) -> Observation:
        return self._env.step(action)

    @property
    def state(self) -> State:
        return self._env.state

    def close(self) -> None:
        self._env.close()


def own_api_model_env(kind: str) -> type[OwnApiModelEnv]:
    """An ``OwnApiModelEnv`` subclass around ``OPENENV_KINDS[kind]`` (a sync env kind)."""
    env_class, action, _ = OPENENV_KINDS[kind]
    if not issubclass(env_class, SyncWrapper) or env_class is AsyncWrapper:
        raise ValueError(f"env kind {kind!r} is not a sync OpenEnv environment")
    return type(f"OwnApi{env_class.__name__}", (OwnApiModelEnv,), {"env_class": env_class, "action_schema": action})
