"""The ``openenv-anyio`` command: one sub-command per job, each in the module that owns it.

A sub-command module provides ``configure(parser)`` (add its arguments; keep imports light)
and ``run(args) -> int`` (do the work; import what it needs there, then call
:func:`openenv_anyio.startup.done` before starting anything that must be stopped cleanly).

This module imports nothing at its top but ``sys`` (and the package's ``__init__`` imports
nothing at all), so that a Ctrl-C in the first instant of any command lands inside
:func:`main`'s handler: exit 130 with one line, never an import traceback.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing takes a while
if TYPE_CHECKING:
    import argparse
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
    import argparse
    import importlib

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
    previous = None
    try:
        from . import startup

        previous = startup.begin()  # a Ctrl-C from here until the command starts: 130, one line
        args = build_parser().parse_args(argv)
        args._argv = list(sys.argv[1:] if argv is None else argv)  # the words as typed (serve --reload passes them on)
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        print("openenv-anyio: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output left (``| head``): end quietly
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush must not fail again
        return 141  # as a shell reports a process ended by SIGPIPE
    finally:
        if previous is not None:
            startup.restore(previous)


if __name__ == "__main__":
    sys.exit(main())
