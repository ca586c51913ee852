"""The ``openenv-anyio`` command: one sub-command per job, each in the module that owns it.

A sub-command module provides ``configure(parser)`` (add its arguments; keep imports light)
and ``run(args) -> int`` (do the work; import what it needs there).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]

#: name -> (module, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("openenv_anyio.server.cli", "serve an environment over /ws, /ws/ui and HTTP"),
    "demo": ("openenv_anyio.demo.cli", "serve an environment and run concurrent agents against it"),
    "check": ("openenv_anyio.conformance.cli", "check a server against the protocol (conformance kit)"),
    "docs": ("openenv_anyio.docs.cli", "generate the protocol reference (Markdown or HTML) from the spec"),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every sub-command."""
    parser = argparse.ArgumentParser(
        prog="openenv-anyio",
        description="Serve, drive, check and document OpenEnv environments (protocol v1).",
    )
    parser.add_argument("--version", action="version", version=f"openenv-anyio {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, summary) in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=summary, description=summary)
        module.configure(command)
        command.set_defaults(_module=module)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openenv-anyio")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    try:
        args = build_parser().parse_args(argv)
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        print("openenv-anyio: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output left (``| head``): end quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush must not fail again
        return 141  # as a shell reports a process ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
