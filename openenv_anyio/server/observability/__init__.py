"""Operating the server: Prometheus metrics, structured log events, OpenTelemetry spans.

The server's endpoints call one :class:`Instruments` per server; the modules behind it each
do one job (:mod:`.metrics`, :mod:`.events`, :mod:`.tracing`, :mod:`.multiprocess`,
:mod:`.log_setup`).
"""

from .instruments import Instruments, peer_of

__all__ = ["Instruments", "peer_of"]
