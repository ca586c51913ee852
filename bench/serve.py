"""Server processes of the benchmark: ``python -m bench.serve STACK [KIND] --port N``.

STACK is ``openenv`` (openenv-core's FastAPI app on uvicorn), ``ours`` (openenv-anyio's
EnvServer), ``echo-hypercorn`` or ``echo-uvicorn`` (the bare ASGI echo). KIND names an env of
``bench.envs.ENV_KINDS``. Always binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import sys

from bench.procs import HOST, raise_fd_limit

STACKS = ("openenv", "ours", "echo-hypercorn", "echo-uvicorn")


def serve_openenv(kind: str, port: int, max_concurrent_envs: int) -> None:
    import uvicorn
    from openenv.core.env_server.http_server import create_fastapi_app

    from bench.stacks.openenv_core_envs import OPENENV_KINDS

    env_cls, action_cls, observation_cls = OPENENV_KINDS[kind]
    app = create_fastapi_app(env_cls, action_cls, observation_cls, max_concurrent_envs=max_concurrent_envs)
    uvicorn.run(app, host=HOST, port=port, log_level="warning", access_log=False)


def serve_ours(kind: str, port: int, max_concurrent_envs: int | None) -> None:
    import trio
    from openenv_anyio.server import EnvServer, ServerConfig

    from bench.envs import ENV_KINDS

    server = EnvServer(ENV_KINDS[kind], ServerConfig(host=HOST, port=port, max_concurrent_envs=max_concurrent_envs))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)

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
    args = parser.parse_args(argv)
    raise_fd_limit()
    try:
        if args.stack == "openenv":
            serve_openenv(args.kind, args.port, args.max_concurrent_envs)
        elif args.stack == "ours":
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
