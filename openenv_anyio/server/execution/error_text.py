"""How the server puts an exception into words for a peer: the one place that does it.

Every ``EXECUTION_ERROR`` message, ``FACTORY_ERROR`` message and HTTP 500 ``detail`` the
server sends comes from :func:`public_error`:

- The exception gets an error id, and the server logs it with the id and the full
  traceback. The client sees the id and either the exception's type and clipped message,
  absolute paths replaced by ``<path>`` (``expose_errors`` on: the default on loopback,
  where the client is the developer), or only the id (off: the default on other addresses,
  where clients are other people and messages may carry secrets, paths or data).
  Tracebacks never leave the server (``SEC-ERR-1``).
- Environment code controls the exception, so the text must never be what fails: a
  ``__str__`` that raises, or a message holding a lone surrogate (which no UTF-8 frame can
  carry), still gives one line of valid text (``SRV-FAULT-2``; :func:`exception_text`).
"""

from __future__ import annotations

import logging
import re
import secrets
import traceback
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_MESSAGE_CHARS",
    "EnvironmentRaised",
    "PublicError",
    "exception_text",
    "printable",
    "public_error",
    "scrub_paths",
]

log = logging.getLogger("openenv_anyio.server")

#: Longest exception message a client is shown (longer ones end with an ellipsis).
MAX_MESSAGE_CHARS: Final = 300
#: The start of a message read to make what the client is shown (a path reaching past the
#: shown end is still seen whole by the scrubber): nothing else of a long message is read.
_READ_CHARS: Final = 4 * MAX_MESSAGE_CHARS
#: A message longer than this goes to the log clipped, its traceback beside it.
LOG_MESSAGE_CHARS: Final = 64 * 1024
_PATH: Final = re.compile(
    r"(?:(?<![\w.:/-])/(?:[^\s/'\":]+/)+[^\s/'\":]*|\b[A-Za-z]:\\(?:[^\s\\'\":]+\\)*[^\s\\'\":]*)"
)


def printable(text: str) -> str:
    """``text`` with every code point that UTF-8 cannot carry (lone surrogates) escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class EnvironmentRaised(Exception):
    """An exception raised in an environment's own process (``--isolate process``), raised
    again in the server: it is put into words by the original type's name and text, and the
    original traceback is a note on it (for the server's log)."""

    def __init__(self, type_name: str, message: str, traceback_text: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name
        if traceback_text:
            self.add_note("in the environment's process:\n" + traceback_text.rstrip())


def _type_name(exc: BaseException) -> str:
    name = exc.type_name if isinstance(exc, EnvironmentRaised) else type(exc).__name__
    return printable(name)


def _raw_message(exc: BaseException) -> str:
    """``str(exc)``, never raising (not yet made encodable)."""
    try:
        return str(exc)
    except BaseException as failure:
        return f"<message unavailable: its __str__ raised {printable(type(failure).__name__)}>"


def _message(exc: BaseException) -> str:
    """``str(exc)``, encodable as UTF-8, never raising."""
    return printable(_raw_message(exc))


def exception_text(exc: BaseException) -> str:
    """``"TypeName: message"`` (or ``"TypeName"`` when the message is empty), always
    encodable as UTF-8, never raising. For the server's own log, not for clients."""
    name = _type_name(exc)
    message = _message(exc)
    return f"{name}: {message}" if message else name


def scrub_paths(text: str) -> str:
    """``text`` with absolute file paths (POSIX with two parts or more, Windows) as ``<path>``."""
    return _PATH.sub("<path>", text)


@dataclass(frozen=True, slots=True)
class PublicError:
    """What a client is told: a one-line message and the id the server's log carries."""

    message: str
    error_id: str


def public_error(exc: BaseException, *, expose: bool, during: str) -> PublicError:
    """Log ``exc`` with a fresh error id and its traceback; return what a client may see.

    ``during`` says what failed (``"step"``, ``"POST /reset"``...), for the log.
    """
    error_id = secrets.token_hex(8)
    name = _type_name(exc)
    raw = _raw_message(exc)
    start = printable(raw[:LOG_MESSAGE_CHARS])
    if start == raw:
        log.warning("error %s during %s: %s", error_id, during, name, exc_info=exc)
    else:  # too long to format whole without holding up every session, or not UTF-8 as it is
        where = "Traceback (most recent call last):\n" + "".join(traceback.format_tb(exc.__traceback__))
        clipped = f"\u2026 ({len(raw)} characters)" if len(raw) > LOG_MESSAGE_CHARS else ""
        log.warning("error %s during %s: %s: %s%s\n%s", error_id, during, name, start, clipped, where)
    if not expose:
        return PublicError(f"internal error {error_id} (the server's log has the details)", error_id)
    # Clip first: the whitespace folding and the path scrubber read the message's start only.
    detail = scrub_paths(" ".join(printable(raw[:_READ_CHARS]).split()))
    if len(raw) > _READ_CHARS:  # the last word may be cut: never show a part of a path
        detail = detail.rpartition(" ")[0] + " \u2026"
    if len(detail) > MAX_MESSAGE_CHARS:
        detail = detail[: MAX_MESSAGE_CHARS - 1] + "\u2026"
    return PublicError(f"{name}: {detail}" if detail else name, error_id)
