"""How the server puts an exception into words for a peer: the one formatting function.

Every ``EXECUTION_ERROR`` message, ``FACTORY_ERROR`` message and HTTP 500 ``detail`` the
server sends is :func:`exception_text` of the exception. Environment code controls the
exception, so the text must never be what fails: a ``__str__`` that raises, or a message
holding a lone surrogate (which no UTF-8 frame can carry), still gives one line of valid
text (``SRV-FAULT-2``).
"""

from __future__ import annotations

__all__ = ["exception_text", "printable"]


def printable(text: str) -> str:
    """``text`` with every code point that UTF-8 cannot carry (lone surrogates) escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def exception_text(exc: BaseException) -> str:
    """``"TypeName: message"`` (or ``"TypeName"`` when the message is empty), always
    encodable as UTF-8, never raising."""
    name = printable(type(exc).__name__)
    try:
        message = str(exc)
    except BaseException as failure:  # noqa: BLE001 - the exception's own __str__ raised (anything)
        message = f"<message unavailable: its __str__ raised {printable(type(failure).__name__)}>"
    return f"{name}: {printable(message)}" if message else name
