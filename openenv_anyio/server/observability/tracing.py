"""OpenTelemetry spans (the optional extra ``openenv-anyio[otel]``).

One ``openenv.session`` span per ``/ws`` connection, a child ``openenv.reset``,
``openenv.step`` or ``openenv.state`` span per request, and inside it an ``env.reset``,
``env.step`` or ``env.state`` span for the environment's own call. The session span's
parent is the W3C trace context of the handshake (``traceparent``/``tracestate`` request
headers: the openenv-anyio client sends its caller's current context), so an agent's trace
continues on the server.

Spans go to the tracer provider given to the server, else OpenTelemetry's global one. They
are current in the connection's task while it runs, so spans an ``async`` or inline
environment opens itself nest under ``env.*``; a synchronous environment running in its
worker thread starts from an empty context.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
from collections.abc import Iterable, Iterator
from typing import Any, Final

__all__ = ["TRACE_EXPORTERS", "SessionTracer", "flush_exporter", "install_exporter", "load_tracer"]


def load_tracer(tracer_provider: Any = None) -> SessionTracer:
    """A tracer for the server's spans; ``RuntimeError`` naming the extra when OpenTelemetry
    is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        raise RuntimeError("traces need OpenTelemetry: pip install 'openenv-anyio[otel]'") from None
    return SessionTracer(trace.get_tracer("openenv_anyio.server", _package_version(), tracer_provider=tracer_provider))


def _package_version() -> str:
    """The installed distribution's version (read from its metadata: importing the package's
    ``__init__`` would import the client too, a layer the server stands beside)."""
    try:
        return importlib.metadata.version("openenv-anyio")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class SessionTracer:
    """Opens the server's spans with one tracer."""

    def __init__(self, tracer: Any) -> None:
        from opentelemetry import context, propagate, trace

        self._tracer = tracer
        self._trace = trace
        self._context = context
        self._propagate = propagate

    @contextlib.contextmanager
    def session(self, headers: Iterable[tuple[bytes, bytes]], attributes: dict[str, Any]) -> Iterator[Any]:
        """The ``openenv.session`` span, current for the block; its parent is the trace
        context of the handshake ``headers`` (when they carry one)."""
        carrier = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in headers}
        parent = self._propagate.extract(carrier)
        span = self._tracer.start_span(
            "openenv.session", context=parent, kind=self._trace.SpanKind.SERVER, attributes=attributes
        )
        token = self._context.attach(self._trace.set_span_in_context(span, parent))
        try:
            yield span
        finally:
            self._context.detach(token)
            span.end()

    @contextlib.contextmanager
    def request(self, kind: str, attributes: dict[str, Any]) -> Iterator[Any]:
        """A request's span, ``openenv.KIND`` (``openenv.step``, ``openenv.tool_call``, ...),
        current for the block."""
        with self._tracer.start_as_current_span(f"openenv.{kind}", attributes=attributes) as span:
            yield span

    @contextlib.contextmanager
    def env_call(self, kind: str) -> Iterator[Any]:
        """The environment's own call inside a request, ``env.KIND`` (``env.step``, ...)."""
        with self._tracer.start_as_current_span(f"env.{kind}") as span:
            yield span

    def mark_current_error(self, code: str, message: str) -> None:
        """An error frame is being sent: an ``openenv.error`` event and the
        ``openenv.error_code`` attribute on the current span (the request's, when there is one)."""
        span = self._trace.get_current_span()
        if span.is_recording():
            span.set_attribute("openenv.error_code", code)
            span.add_event("openenv.error", {"openenv.error_code": code, "message": message})


#: ``openenv-anyio serve --traces KIND``: where the command sends spans.
TRACE_EXPORTERS: Final = ("console", "otlp")
#: the exporter chosen, left in the environment for the worker processes of ``--workers N``
TRACES_ENV_VAR: Final = "OPENENV_ANYIO_TRACES"


def install_exporter(kind: str) -> None:
    """Set OpenTelemetry's global tracer provider to one that exports spans to ``kind``:
    ``console`` (one JSON object per span on stdout) or ``otlp`` (OTLP over HTTP, configured
    by the standard ``OTEL_EXPORTER_OTLP_*`` variables; needs
    ``opentelemetry-exporter-otlp-proto-http``). ``RuntimeError`` naming what is missing."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        raise RuntimeError("traces need OpenTelemetry: pip install 'openenv-anyio[otel]'") from None
    exporter: SpanExporter
    match kind:
        case "console":
            exporter = ConsoleSpanExporter()
        case "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                    OTLPSpanExporter,
                )
            except ImportError:
                raise RuntimeError("--traces otlp needs: pip install opentelemetry-exporter-otlp-proto-http") from None
            exporter = OTLPSpanExporter()
        case _:
            raise ValueError(f"unknown trace exporter {kind!r} (one of {', '.join(TRACE_EXPORTERS)})")
    provider = TracerProvider(resource=Resource.create({"service.name": "openenv-anyio"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    os.environ[TRACES_ENV_VAR] = kind


def flush_exporter() -> None:
    """Export the spans still buffered by :func:`install_exporter`'s provider (at exit)."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    shutdown = getattr(provider, "shutdown", None)
    if shutdown is not None:
        shutdown()
