"""A command's first instant: a Ctrl-C before it has started anything ends it at once.

Theory of operation. Starting a command is mostly importing (the server, trio, the schema
engines); nothing in that time needs stopping. Python's own reaction to SIGINT, raising
KeyboardInterrupt wherever the interpreter happens to be, prints a traceback through the
import machinery there, and inside a native extension's initialisation can even panic or
crash it. So :func:`begin` (the first thing ``openenv-anyio`` does) replaces it with
:func:`end_at_once`: one line, exit 130, no traceback, no cleanup (there is none to do). A
command calls :func:`done` when it is about to start something that must be stopped
cleanly (a server, a run of cases): from then on SIGINT is Python's KeyboardInterrupt again,
which trio turns into its own protected handling and the commands' signal receivers into a
clean stop. Commands that start nothing needing a stop (``docs``) never call it.

Two phases, one transition (``begin`` -> ``done``); :func:`restore` puts back whatever
handler was there before ``begin`` (for a caller that runs the command inside its own
process, such as a test).
"""

from __future__ import annotations

import os
import signal

__all__ = ["begin", "done", "end_at_once", "restore"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

#: the line a Ctrl-C during start-up leaves on standard error
INTERRUPTED_LINE = b"openenv-anyio: interrupted\n"


def end_at_once(signum: int, frame: FrameType | None) -> None:
    """A SIGINT during start-up: say so in one line and end with the shell's status (130)."""
    os.write(2, INTERRUPTED_LINE)
    os._exit(128 + signum)


def begin() -> signal._HANDLER:
    """Enter start-up (SIGINT ends the process at once); returns the handler it replaced."""
    return signal.signal(signal.SIGINT, end_at_once)


def done() -> None:
    """Leave start-up: SIGINT raises KeyboardInterrupt again (unless start-up was never
    entered, e.g. the command runs inside another program that set its own handler)."""
    if signal.getsignal(signal.SIGINT) is end_at_once:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def restore(previous: signal._HANDLER) -> None:
    """Put back the handler :func:`begin` replaced (None: one not set from Python, kept as is)."""
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
