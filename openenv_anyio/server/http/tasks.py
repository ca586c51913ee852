"""The Task API (``TASK-1`` to ``TASK-4``, as upstream OpenEnv serves it): a dataset-backed
environment's splits and tasks under ``/{env}/...``, from the optional task methods of the
env API (:class:`~openenv_anyio.environment.TaskProvider`).

Each request builds a fresh environment (it holds a session slot while it lives, ``HTTP-6``)
and calls one task method on it: sync ones on its runner, ``async def`` ones awaited. The
answers: 404 for another environment's name, 422 for a body that is not the route's, 501
when the environment has no such method (or it raises ``NotImplementedError``), 400 when
it raises ``KeyError`` (an unknown split) or ``IndexError`` (no such task), 500 (``SEC-ERR-1``)
when it raises otherwise or its answer is over :data:`MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final

from quart import Response, request
from quart_trio import QuartTrio

from ...core import dumps
from ...environment import env_metadata
from ..context import ServerContext
from ..execution.error_text import public_error

__all__ = ["MAX_ANSWER_BYTES", "add_task_routes", "served_env_names"]

#: the largest Task API answer (upstream's validator reads at most 1 MiB of one)
MAX_ANSWER_BYTES: Final = 1024 * 1024
#: the split types upstream names; a split given as a bare name of another kind is a validation split
_SPLIT_TYPES: Final = frozenset({"train", "validation", "test"})

JsonBody = Callable[[], Awaitable[Any]]


class TaskRefused(Exception):
    """A Task API request answered with an error status and a one-line ``detail``."""

    def __init__(self, status: int, detail: Any, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.body = {"detail": detail, **extra}


def served_env_names(ctx: ServerContext) -> tuple[str, ...]:
    """The names ``{env}`` may take (compared case-insensitively): the factory's class name,
    as upstream's server derives it, and the environment's metadata name."""
    factory = ctx.factory
    names = [getattr(factory, "__name__", None) or getattr(factory, "__qualname__", None)]
    declared = getattr(factory, "metadata", None)
    if isinstance(factory, type) or isinstance(declared, Mapping):
        names.append(env_metadata(factory)["name"])
    return tuple(dict.fromkeys(str(name) for name in names if name))


def _split_entry(split: Any) -> Any:
    """A split as ``GET /{env}/splits`` lists it: ``{"name", "type"}`` for a bare name."""
    dump = getattr(split, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(split, Mapping):
        return dict(split)
    name = str(split)
    return {"name": name, "type": name if name in _SPLIT_TYPES else "validation"}


def _unprocessable(location: str, message: str, kind: str) -> TaskRefused:
    return TaskRefused(422, [{"loc": ["body", location] if location else ["body"], "msg": message, "type": kind}])


def _body_fields(body: Any, fields: Mapping[str, tuple[bool, str]]) -> dict[str, Any]:
    """The members of ``body`` the route takes: ``{name: (required, "string" | "index")}``.
    Extra members, missing required ones and values of the wrong type are 422 (``TASK-3``)."""
    if not isinstance(body, dict):
        raise _unprocessable("", "the body must be a JSON object", "model_attributes_type")
    extra = sorted(set(body) - set(fields))
    if extra:
        raise _unprocessable(extra[0], "Extra inputs are not permitted", "extra_forbidden")
    taken: dict[str, Any] = {}
    for name, (required, kind) in fields.items():
        if name not in body:
            if required:
                raise _unprocessable(name, "Field required", "missing")
            taken[name] = None
            continue
        value = body[name]
        if kind == "string" and not isinstance(value, str):
            raise _unprocessable(name, "Input should be a valid string", "string_type")
        if kind == "index" and (isinstance(value, bool) or not isinstance(value, int)):
            if value is None and not required:
                taken[name] = None
                continue
            raise _unprocessable(name, "Input should be a valid integer", "int_type")
        if kind == "index" and value < 0:
            raise _unprocessable(name, "Input should be greater than or equal to 0", "greater_than_equal")
        taken[name] = value
    return taken


def add_task_routes(app: QuartTrio, ctx: ServerContext, json_body: JsonBody) -> None:
    """Serve the Task API on ``app`` (both modes: it reads, it never runs an episode)."""
    names = {name.lower() for name in served_env_names(ctx)}

    def check_name(env: str) -> None:
        if env.lower() not in names:
            raise TaskRefused(404, f"unknown environment {env!r}")

    async def call(method_name: str, *args: Any) -> Any:
        async with ctx.fresh_env() as bound:
            method = getattr(bound.env, method_name, None)
            if not callable(method):
                raise TaskRefused(501, f"{method_name} is not supported for this environment")
            try:
                if inspect.iscoroutinefunction(method):
                    return await method(*args)
                return await bound.runner.run(partial(method, *args))
            except NotImplementedError:
                raise TaskRefused(501, f"{method_name} is not supported for this environment") from None
            except KeyError as exc:
                raise TaskRefused(400, f"unknown split {args[0]!r}" if args else f"unknown key {exc}") from None
            except IndexError:
                raise TaskRefused(
                    400, f"no task {args[1]!r} in split {args[0]!r}" if len(args) > 1 else "no such task"
                ) from None
            except Exception as exc:  # SEC-ERR-1
                public = public_error(exc, expose=ctx.config.errors_exposed, during=f"{request.method} {request.path}")
                raise TaskRefused(500, public.message, error_id=public.error_id) from None

    def answer(value: Any) -> Response:
        try:
            text = dumps(value)
        except TypeError as exc:
            raise TaskRefused(500, f"the task answer is not JSON: {exc}") from None
        if len(text.encode()) > MAX_ANSWER_BYTES:  # TASK-4
            raise TaskRefused(500, f"the answer is over the Task API's {MAX_ANSWER_BYTES // 1024} KiB limit")
        return Response(text, status=200, content_type="application/json")

    @app.errorhandler(TaskRefused)
    async def refused(error: TaskRefused) -> Response:
        return Response(dumps(error.body), status=error.status, content_type="application/json")

    @app.get("/list_environments")
    async def list_environments() -> Response:  # TASK-1
        return answer([served_env_names(ctx)[0]])

    @app.get("/<env>/splits")
    async def splits(env: str) -> Response:  # TASK-1
        check_name(env)
        return answer([_split_entry(split) for split in await call("list_splits") or ()])

    @app.post("/<env>/num_tasks")
    async def num_tasks(env: str) -> Response:  # TASK-2
        check_name(env)
        split = _body_fields(await json_body(), {"split": (True, "string")})["split"]
        count = await call("num_tasks", split)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TaskRefused(500, f"num_tasks gave {count!r:.80}, not a count")
        return answer({"num_tasks": count})

    @app.post("/<env>/task")
    async def task(env: str) -> Response:  # TASK-2
        check_name(env)
        fields = _body_fields(await json_body(), {"split": (True, "string"), "index": (True, "index")})
        return answer({"task": await call("get_task", fields["split"], fields["index"])})

    @app.post("/<env>/tasks")
    async def tasks(env: str) -> Response:  # TASK-2
        check_name(env)
        split = _body_fields(await json_body(), {"split": (True, "string")})["split"]
        return answer({"tasks": list(await call("list_tasks", split)), "env_name": served_env_names(ctx)[0]})

    @app.post("/<env>/task_range")
    async def task_range(env: str) -> Response:  # TASK-2
        check_name(env)
        fields = _body_fields(
            await json_body(), {"split": (True, "string"), "start": (False, "index"), "stop": (False, "index")}
        )

        found = await call("get_task_range", fields["split"], fields["start"], fields["stop"])
        return answer({"tasks": list(found)})
