"""Process isolation (``serve --isolate process``): each session's environment in a process
of its own, so a crash, an ``os._exit`` or a busy loop in environment code ends only that
session. :class:`ProcessIsolated` is the factory, :class:`IsolatedEnv` the bound environment."""

from .isolated_env import IsolatedEnv, ProcessIsolated, import_name_of

__all__ = ["IsolatedEnv", "ProcessIsolated", "import_name_of"]
