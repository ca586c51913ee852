"""Server processes of the benchmark: ``python -m bench.serve STACK [KIND] --port N``.

STACK is ``openenv`` (openenv-core's FastAPI app on uvicorn), ``ours`` (openenv-anyio's
EnvServer), ``ours-nometrics`` (the same with ``ServerConfig.metrics`` off),
``ours-mpmetrics`` (metrics in prometheus-client's multiprocess mode, as under several
workers), ``echo-hypercorn`` or ``echo-uvicorn`` (the bare ASGI echo). KIND names an env of
``bench.envs.ENV_KINDS``, or one of ``ISOLATED_KINDS`` (the same env under ``--isolate
process``). Always binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bench.procs import HOST, raise_fd_limit

STACKS = ("openenv", "ours", "ours-nometrics", "ours-mpmetrics", "echo-hypercorn", "echo-uvicorn")
#: env kinds our server serves as openenv-core ``Environment`` classes through its adapter
#: (``openenv_anyio.envs.openenv_core``): the OpenEnv side's class of the named kind
ADAPTED_KINDS = {"echo_adapted": "echo"}
#: env kinds our server serves written in its own env API with the OpenEnv side's models
#: (``bench.stacks.openenv_core_envs.OwnApiModelEnv``): the adapter's model work, no adapter
MODEL_KINDS = {"echo_models": "echo"}
#: env kinds that import openenv-core into our server process
OPENENV_CORE_KINDS = {**ADAPTED_KINDS, **MODEL_KINDS}
#: env kinds our server runs with process isolation (``ServerConfig(isolate="process")``):
#: each session's environment, of the named kind, in a process of its own
ISOLATED_KINDS = {"echo_isolated": "echo", "echo_inline_isolated": "echo_inline"}


def openenv_app() -> object:
    """openenv-core's app for the env kind in ``BENCH_OPENENV_KIND`` (uvicorn's factory,
    imported by each of its worker processes)."""
    import os

    from openenv.core.env_server.http_server import create_fastapi_app

    from bench.stacks.openenv_core_envs import OPENENV_KINDS

    env_cls, action_cls, observation_cls = OPENENV_KINDS[os.environ["BENCH_OPENENV_KIND"]]
    limit = int(os.environ["BENCH_OPENENV_MAX_ENVS"])
    return create_fastapi_app(env_cls, action_cls, observation_cls, max_concurrent_envs=limit)


def serve_openenv(kind: str, port: int, max_concurrent_envs: int, workers: int = 1) -> None:
    import os

    import uvicorn

    os.environ["BENCH_OPENENV_KIND"] = kind
    os.environ["BENCH_OPENENV_MAX_ENVS"] = str(max_concurrent_envs)
    if workers == 1:
        uvicorn.run(openenv_app(), host=HOST, port=port, log_level="warning", access_log=False)  # type: ignore[arg-type]
    else:  # uvicorn's own multi-process mode: one shared socket, no session affinity
        # a worker's first health check waits for its imports (slow on a busy machine)
        uvicorn.run(
            "bench.serve:openenv_app",
            factory=True,
            workers=workers,
            host=HOST,
            port=port,
            log_level="warning",
            access_log=False,
            timeout_worker_healthcheck=120,
        )


def serve_ours(
    kind: str,
    port: int,
    max_concurrent_envs: int | None,
    workers: int = 1,
    *,
    metrics: bool = True,
    switch_interval_s: float | None = None,
) -> None:
    import signal

    import trio

    from bench.envs import ENV_KINDS
    from openenv_anyio.server import EnvServer, ServerConfig
    from openenv_anyio.server.workers import WorkerSupervisor

    isolate = "process" if kind in ISOLATED_KINDS else "thread"
    kind = ISOLATED_KINDS.get(kind, kind)
    config = ServerConfig(
        host=HOST,
        port=port,
        max_concurrent_envs=max_concurrent_envs,
        metrics=metrics,
        isolate=isolate,
        switch_interval_s=switch_interval_s,
    )
    if kind in ADAPTED_KINDS:  # the OpenEnv side's environment class, served through our adapter
        from bench.stacks.openenv_core_envs import OPENENV_KINDS
        from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv

        if workers != 1:
            raise SystemExit(f"env kind {kind} is served by one process only")
        server: EnvServer | WorkerSupervisor = EnvServer(
            OpenEnvCoreEnv.wrap(OPENENV_KINDS[ADAPTED_KINDS[kind]][0]), config
        )
    elif kind in MODEL_KINDS:  # the same environment and models, in our own env API
        from bench.stacks.openenv_core_envs import own_api_model_env

        if workers != 1:
            raise SystemExit(f"env kind {kind} is served by one process only")
        server = EnvServer(own_api_model_env(MODEL_KINDS[kind]), config)
    else:
        env = ENV_KINDS[kind]
        server = (
            EnvServer(env, config)
            if workers == 1
            else WorkerSupervisor(
                f"{env.__module__}:{env.__qualname__}", config, workers, max_sessions=max_concurrent_envs
            )
        )

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                await nursery.start(server.serve)
                async for _ in signals:
                    server.shutdown()
                    break

    trio.run(main)


def serve_echo_hypercorn(port: int) -> None:
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from bench.raw_echo import echo_app

    config = Config()
    config.bind = [f"{HOST}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.websocket_ping_interval = None
    trio.run(serve, echo_app, config)  # type: ignore[arg-type]


def serve_echo_uvicorn(port: int) -> None:
    import uvicorn

    from bench.raw_echo import echo_app

    uvicorn.run(echo_app, host=HOST, port=port, log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve")
    parser.add_argument("stack", choices=STACKS)
    parser.add_argument("kind", nargs="?", default="echo")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-concurrent-envs", type=int, default=10_000)
    parser.add_argument(
        "--workers", type=int, default=1, help="server processes (ours: --workers; openenv: uvicorn's workers)"
    )
    parser.add_argument(
        "--switch-interval", type=float, default=None, help="ours: ServerConfig.switch_interval_s (seconds)"
    )
    args = parser.parse_args(argv)
    raise_fd_limit()
    try:
        if args.stack == "openenv":
            serve_openenv(args.kind, args.port, args.max_concurrent_envs, args.workers)
        elif args.stack == "ours":
            serve_ours(
                args.kind, args.port, args.max_concurrent_envs, args.workers, switch_interval_s=args.switch_interval
            )
        elif args.stack == "ours-nometrics":
            serve_ours(args.kind, args.port, args.max_concurrent_envs, args.workers, metrics=False)
        elif args.stack == "ours-mpmetrics":
            with tempfile.TemporaryDirectory(prefix="openenv-metrics-") as directory:
                os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory  # before prometheus_client is imported
                serve_ours(args.kind, args.port, args.max_concurrent_envs)
        elif args.stack == "echo-hypercorn":
            serve_echo_hypercorn(args.port)
        else:
            serve_echo_uvicorn(args.port)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
