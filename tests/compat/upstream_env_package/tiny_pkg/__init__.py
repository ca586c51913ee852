"""An environment package written against upstream ``openenv`` 0.10, the way env authors ship
theirs: typed clients that subclass upstream's ``EnvClient`` and ``MCPToolClient``. The compat
tests adopt them without editing them (``openenv_anyio.compat.adopt``)."""

from .client import NotesPkgEnv, TinyPkgAction, TinyPkgEnv, TinyPkgObservation

__all__ = ["NotesPkgEnv", "TinyPkgAction", "TinyPkgEnv", "TinyPkgObservation"]
