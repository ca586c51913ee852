"""Errors of the reference generator: each one is a single line that names the file at fault."""

from __future__ import annotations

__all__ = ["BrokenExampleError", "DocsError", "UnresolvableRefError"]


class DocsError(Exception):
    """The reference cannot be generated from the spec; the message is one line naming the file."""


class UnresolvableRefError(DocsError):
    """A schema's ``$ref`` points at no document of the spec, or at no place inside one."""


class BrokenExampleError(DocsError):
    """An example vector is malformed, or its verdict disagrees with its entry point's schema."""
