# Until main() puts in its one-line handler, a Ctrl-C ends the process quietly with the signal's
# status instead of a traceback from wherever the start happens to be (importing the command
# line, compiling it where bytecode is not cached). ``_signal`` is the interpreter's built-in
# half of ``signal``: importing it runs no Python code, where ``signal`` builds its enums first.
import _signal  # type: ignore[import-not-found]  # (no stub: the built-in module)

_signal.signal(_signal.SIGINT, _signal.SIG_DFL)

import sys  # noqa: E402

from .cli import main  # noqa: E402

sys.exit(main())
