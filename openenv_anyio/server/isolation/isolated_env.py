"""An environment that runs in a process of its own, seen by the server as any bound environment.

:class:`ProcessIsolated` is the factory a server is given under ``--isolate process``: it
names the serve target by its import string (the process imports it itself). Each
environment it makes is an :class:`IsolatedEnv`: an implementation of
:class:`~openenv_anyio.server.execution.bound_env.BoundEnv` whose reset, step, state, tools
and close are requests to its process (:mod:`.env_process`).
The session code is the same for both kinds: an exception the environment raised comes back
with its type name and text (``EXECUTION_ERROR``), a ``SystemExit`` is an
:class:`~openenv_anyio.server.execution.bound_env.EnvironmentAborted` (``SRV-FAULT-1``), and a process
that died or overran the step timeout is an :class:`~openenv_anyio.server.execution.bound_env.EnvironmentLost`.
"""

from __future__ import annotations

import base64
import importlib
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, assert_never

from ...core import ErrorCode, ProtocolError, RpcCode, RpcFailure
from ...environment import EnvFactory, LiftedObservation
from ...restoration import RestoreFailed, RestoreWay, Snapshot, SnapshotFailed, SnapshotTooLarge
from ..execution.action_check import ActionCheck, action_check_for
from ..execution.bound_env import EnvironmentAborted, EnvironmentLost, FactoryFailure
from ..execution.error_text import EnvironmentRaised
from ..execution.runner import InlineRunner
from .env_process import EnvProcess
from .messages import Fault, FaultKind, Op

__all__ = ["IsolatedEnv", "ProcessIsolated", "import_name_of"]

log = logging.getLogger("openenv_anyio.server")


def import_name_of(factory: Any) -> str:
    """``MODULE:QUALNAME`` under which another process finds ``factory`` (a class or function
    defined at the top of an importable module); ``ValueError`` when there is none."""
    module_name = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not module_name or not qualname or "<" in qualname or module_name == "__main__":
        raise ValueError(
            f"isolate='process' needs an environment another process can import, not {factory!r}: "
            "define it at the top of a module, or give ProcessIsolated('module:Attr')"
        )
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part, None)
    if value is not factory:
        raise ValueError(f"{module_name}:{qualname} does not name {factory!r}: give ProcessIsolated('module:Attr')")
    return f"{module_name}:{qualname}"


class ProcessIsolated:
    """An environment factory whose environments each run in a process of their own.

    ``target`` is the serve target (``MODULE:ATTR`` or ``gymnasium:ENV_ID``, as
    ``openenv-anyio serve`` takes it); ``local``, if given, is that target resolved in this
    process, read for what the server needs before any environment exists (its session cap).
    """

    def __init__(self, target: str, local: EnvFactory | None = None) -> None:
        self.target = target
        self.__qualname__ = target.rpartition(":")[2] or target  # how errors name the factory
        cap = getattr(local, "MAX_CONCURRENT_SESSIONS", None)
        if cap is not None:
            self.MAX_CONCURRENT_SESSIONS = cap

    @classmethod
    def of(cls, factory: Any) -> ProcessIsolated:
        """``factory`` itself if it is one, else one for the importable ``factory``."""
        return factory if isinstance(factory, cls) else cls(import_name_of(factory), factory)

    def __call__(self) -> Any:
        raise TypeError("a ProcessIsolated factory makes environments in their own processes: use IsolatedEnv.start")

    def __repr__(self) -> str:
        return f"ProcessIsolated({self.target!r})"


class _Description:
    """What the server reads from an environment instance without calling it (schemas,
    metadata, tools), as its process described it."""

    def __init__(self, ready: Mapping[str, Any], env: IsolatedEnv) -> None:
        schemas = ready.get("schemas") or {}
        self.action_schema = schemas.get("action")
        self.observation_schema = schemas.get("observation")
        self.state_schema = schemas.get("state")
        self.reset_observation_schema = schemas.get("reset_observation")
        self.metadata = ready.get("metadata")
        self.name = str(ready.get("name") or "environment")
        #: whether its reset applies a seed (read by :func:`~openenv_anyio.environment.takes_seed`)
        self.SEEDED = bool(ready.get("seeded", True))
        # how its episode comes back (``openenv_anyio.restoration``), as the process said; a
        # way it found none for is left undeclared, for the operator's --deterministic to decide
        way = RestoreWay(ready.get("restore") or RestoreWay.NONE.value)
        if way is not RestoreWay.NONE or ready.get("restore_declared"):
            self.RESTORE_WAY = way
        if ready.get("tools"):
            self.list_tools = env.list_tools
            self.call_tool = env.call_tool


def _raised(fault: Fault) -> Exception:
    """The exception that stands for ``fault`` in the server."""
    match fault.kind:
        case FaultKind.RAISED:
            return EnvironmentRaised(fault.type_name, fault.message, fault.traceback)
        case FaultKind.ABORTED:
            return EnvironmentAborted(EnvironmentRaised(fault.type_name, fault.message, fault.traceback))
        case FaultKind.REFUSED:
            details = fault.details
            return ProtocolError(
                ErrorCode(fault.code),
                fault.message,
                pointer=str(details.get("pointer") or ""),
                keyword=details.get("keyword"),
                errors=details.get("errors"),
            )
        case FaultKind.RPC:
            return RpcFailure(RpcCode(fault.code), fault.message, fault.details.get("data"))
        case FaultKind.SNAPSHOT:
            match fault.type_name:
                case "SnapshotTooLarge":
                    return SnapshotTooLarge(int(fault.details["size"]), int(fault.details["limit"]))
                case "RestoreFailed":
                    return RestoreFailed(fault.message)
                case _:
                    return SnapshotFailed(fault.message)
        case _:
            assert_never(fault.kind)


class IsolatedEnv:
    """A bound environment whose instance lives in its own process (see the module doc).

    ``step_timeout_s`` bounds every request but ``close`` (whose bound is the caller's);
    ``grace_s`` is how long the process may take to exit after ``close``."""

    __slots__ = ("process", "env", "runner", "_action_check", "_step_timeout_s", "_grace_s", "_closed")

    #: a session watches the process between requests (SRV-ISO-2)
    WATCHED: ClassVar[bool] = True

    def __init__(
        self, process: EnvProcess, ready: Mapping[str, Any], *, step_timeout_s: float | None, grace_s: float
    ) -> None:
        self.process = process
        self._step_timeout_s = step_timeout_s
        self._grace_s = grace_s
        #: what the process described: schemas, metadata, tools (calls go to the process)
        self.env = _Description(ready, self)
        #: the tools' calls are requests to the process, awaited on the event loop
        self.runner = InlineRunner()
        self._action_check: ActionCheck = action_check_for(self.env.action_schema)
        self._closed = False

    @classmethod
    async def start(
        cls, factory: ProcessIsolated, *, step_timeout_s: float | None = None, grace_s: float = 3.0
    ) -> IsolatedEnv:
        """Start a process and build the environment there; raises
        :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` when that fails (the process
        is gone by then)."""
        process = EnvProcess(factory.target)
        try:
            first = await process.start()
        except EnvironmentLost as lost:
            await process.end(grace_s)
            raise FactoryFailure(factory, lost) from lost
        except BaseException:
            await process.end(grace_s)
            raise
        if "ready" not in first:
            await process.end(grace_s)
            failed = Fault.from_wire(first.get("failed"))
            raise FactoryFailure(factory, EnvironmentRaised(failed.type_name, failed.message, failed.traceback))
        return cls(process, first["ready"], step_timeout_s=step_timeout_s, grace_s=grace_s)

    @property
    def name(self) -> str:
        return self.env.name

    def check_action(self, action: Mapping[str, Any]) -> Any:
        """Checked here against the schema the process described (``WS-STEP-2``)."""
        return self._action_check(action)

    async def _ask(self, request: dict[str, Any]) -> Any:
        reply = await self.process.request(request, self._step_timeout_s)
        if "ok" in reply:
            return reply["ok"]
        raise _raised(Fault.from_wire(reply.get("error")))

    async def reset(self, kwargs: Mapping[str, Any]) -> tuple[LiftedObservation, dict[str, Any] | None]:
        answer = await self._ask({"op": Op.RESET.value, "kwargs": dict(kwargs)})
        return _lifted(answer), answer.get("state")

    async def step(self, action: Any) -> LiftedObservation:
        return _lifted(await self._ask({"op": Op.STEP.value, "action": action}))

    async def state(self) -> dict[str, Any]:
        state: dict[str, Any] = await self._ask({"op": Op.STATE.value})
        return state

    async def list_tools(self) -> Any:
        return await self._ask({"op": Op.LIST_TOOLS.value})

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        return await self._ask({"op": Op.CALL_TOOL.value, "name": name, "arguments": dict(arguments)})

    async def snapshot(self, limit: int) -> Snapshot:
        answer = await self._ask({"op": Op.SNAPSHOT.value, "limit": limit})
        return Snapshot(base64.b64decode(answer["data"]), bool(answer["json"]))

    async def restore(self, snapshot: Snapshot) -> None:
        data = base64.b64encode(snapshot.data).decode("ascii")
        await self._ask({"op": Op.RESTORE.value, "json": snapshot.is_json, "data": data})

    async def watch_lost(self) -> EnvironmentLost | None:
        return await self.process.watch_idle()

    def still_closing(self) -> bool:
        return self.process.alive()

    async def aclose(self) -> None:
        """Ask the process to close the environment, then end the process (always: a
        ``close()`` cancelled by the caller's bound kills it)."""
        if self._closed:
            return
        self._closed = True
        try:
            reply = await self.process.request({"op": Op.CLOSE.value}, None)
            if "error" in reply:
                log.error("environment close() raised %s", Fault.from_wire(reply["error"]).message)
        except EnvironmentLost as lost:
            log.info("environment %s: not closed, %s", self.name, lost)
        finally:
            await self.process.end(self._grace_s)


def _lifted(answer: Mapping[str, Any]) -> LiftedObservation:
    return LiftedObservation(answer["observation"], answer["reward"], answer["done"], answer.get("metadata"))
