"""Stack adapters by name, imported lazily (the OpenEnv one pulls in openenv-core)."""

from __future__ import annotations

import importlib
from types import ModuleType

from bench.stacks import StackUnavailable

_MODULES = {
    "openenv": "bench.stacks.openenv_core",
    "ours": "bench.stacks.ours",
    "raw": "bench.stacks.raw",
}


def stack_module(name: str) -> ModuleType:
    """The adapter module of stack ``name``."""
    try:
        return importlib.import_module(_MODULES[name])
    except KeyError:
        raise StackUnavailable(f"unknown stack {name!r}") from None


def client_stack(name: str) -> ModuleType:
    """The adapter of ``name``, checked to have a working client here."""
    module = stack_module(name)
    check = getattr(module, "check_client", None) or getattr(module, "check_available", None)
    if check is not None:
        check()
    return module
