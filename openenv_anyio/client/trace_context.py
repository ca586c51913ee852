"""The caller's OpenTelemetry trace context, sent with the opening handshake.

When OpenTelemetry is installed and a span is current, the upgrade request carries its W3C
``traceparent`` (and ``tracestate``, baggage) headers through OpenTelemetry's configured
propagator, so the server's ``openenv.session`` span continues the agent's trace. Without
OpenTelemetry, or with no current span, nothing is added.
"""

from __future__ import annotations

from typing import Any

__all__ = ["trace_context_headers"]

_propagate: Any = None  # the opentelemetry.propagate module, False when not installed


def trace_context_headers() -> list[tuple[bytes, bytes]]:
    """The headers that carry the current trace context (none without OpenTelemetry)."""
    global _propagate
    if _propagate is None:
        try:
            from opentelemetry import propagate
        except ImportError:
            _propagate = False
        else:
            _propagate = propagate
    if _propagate is False:
        return []
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in carrier.items()]
