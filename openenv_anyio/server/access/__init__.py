"""Who may use which route: the access policy (:mod:`.policy`, a sans-IO decision) and the
guard that applies it to every ASGI scope (:mod:`.guard`)."""

from .policy import *  # noqa: F403  (the policy's API, as openenv_anyio.server.access.decide etc.)
from .policy import __all__ as __all__
