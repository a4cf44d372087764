"""The OpenTelemetry adapter of `ports.tracing`: spans through an SDK tracer provider of its own,
exported over OTLP/HTTP (protobuf) or printed on standard output, and the trace context carried
as W3C `traceparent`/`tracestate` headers.

The one module that imports OpenTelemetry (an import-linter rule holds it), and only the
composition root imports it, when `[telemetry]` is configured: a server without telemetry never
pays for loading it. Each server gets a provider of its own (not the process-global one), so
two replicas in one process (tests) export to two places.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextvars import Token
from types import TracebackType

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Span as OtelSpan
from opentelemetry.trace import Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from clarion.config.telemetry import TelemetrySettings
from clarion.ports.tracing import AttributeValue, Carrier

log = logging.getLogger(__name__)

# Every attribute Clarion records is named `clarion.<key>`.
PREFIX = "clarion."
# How long one OTLP export may take (retries included), and how long a stopping server waits
# for the spans still queued: an unreachable collector must not hold the shutdown.
_EXPORT_TIMEOUT_S = 5.0
_SHUTDOWN_WAIT_S = 5.0

_PROPAGATOR = TraceContextTextMapPropagator()
_OUTCOME = PREFIX + "outcome"
_TASK_ID = PREFIX + "task_id"
_SESSION_ID = PREFIX + "session_id"
_TURN_ID = PREFIX + "turn_id"
_PENDING_ID = PREFIX + "pending_id"


class _Span:
    """`ports.tracing.Span` over an SDK span, and the `with` block around it.

    A plain class, not a generator context manager over the SDK's `start_as_current_span`
    (itself two generators deep): a cycle makes six or seven spans on the event loop's thread,
    and each layer and each locked attribute write showed in its CPU. So the ids go in with the
    span's start, the attributes set inside the block are kept in a dict and written once, as
    the span ends, and the span is made current by hand."""

    __slots__ = ("_attributes", "_context", "_ids", "_name", "_span", "_token", "_tracer")
    _span: OtelSpan
    _token: Token[Context]

    def __init__(
        self, tracer: Tracer, name: str, context: Context | None, ids: dict[str, AttributeValue]
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._context = context
        self._ids = ids
        self._attributes: dict[str, AttributeValue] = {}

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is not None:
            self._attributes[PREFIX + key] = value

    def __enter__(self) -> _Span:
        self._span = self._tracer.start_span(
            self._name,
            context=self._context,
            attributes=self._ids or None,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._token = otel_context.attach(set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        otel_context.detach(self._token)
        span = self._span
        if exc is not None:
            # Recorded here, with the outcome; the SDK's own handling would record a
            # cancellation (a BaseException) as nothing.
            self._attributes.setdefault(_OUTCOME, type(exc).__name__)
            if isinstance(exc, Exception):
                span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        if self._attributes:
            span.set_attributes(self._attributes)
        span.end()


class OtelTracer:
    """`ports.tracing.Tracer` over an SDK tracer provider."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("clarion")

    def span(
        self,
        name: str,
        *,
        parent: Carrier | None = None,
        task_id: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        pending_id: str | None = None,
    ) -> _Span:
        # An empty carrier (no trace where it came from) leaves the current span the parent.
        context = _PROPAGATOR.extract(parent) if parent else None
        ids: dict[str, AttributeValue] = {
            key: value
            for key, value in (
                (_TASK_ID, task_id),
                (_SESSION_ID, session_id),
                (_TURN_ID, turn_id),
                (_PENDING_ID, pending_id),
            )
            if value is not None
        }
        return _Span(self._tracer, name, context, ids)

    def carrier(self) -> Carrier:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    @contextlib.contextmanager
    def continuing(self, carrier: Carrier) -> Iterator[None]:
        # An invalid `traceparent` extracts to an empty context: the block's spans are roots.
        token = otel_context.attach(_PROPAGATOR.extract(carrier))
        try:
            yield
        finally:
            otel_context.detach(token)


def provider_for(
    settings: TelemetrySettings, exporter: SpanExporter | None = None
) -> TracerProvider:
    """A provider exporting where `settings` say, or to `exporter` (tests: in memory)."""
    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}))
    processor: SpanProcessor
    if exporter is not None:
        processor = SimpleSpanProcessor(exporter)
    elif settings.exporter == "console":
        # One JSON object per line on standard output, as each span ends: the operator asked
        # to see them there, now.
        processor = SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout, formatter=_one_line))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=settings.endpoint, timeout=_EXPORT_TIMEOUT_S),
            export_timeout_millis=_EXPORT_TIMEOUT_S * 1000,
        )
    provider.add_span_processor(processor)
    return provider


@contextlib.asynccontextmanager
async def otel_tracer(
    settings: TelemetrySettings, exporter: SpanExporter | None = None
) -> AsyncIterator[OtelTracer]:
    """A tracer for one server's life; on exit, the spans still queued are sent (waiting no
    longer than a few seconds, off the event loop)."""
    provider = provider_for(settings, exporter)
    log.info(
        "tracing on",
        extra={"exporter": settings.exporter, "endpoint": settings.endpoint or "stdout"},
    )
    try:
        yield OtelTracer(provider)
    finally:
        await _shut_down(provider)


async def _shut_down(provider: TracerProvider) -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def shut_down() -> None:
        try:
            provider.shutdown()
        finally:
            # The loop may be gone already, when the wait below gave up and the process ended.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, done)

    # A daemon thread, not the loop's executor: a collector that does not answer must not
    # hold the process past this wait.
    threading.Thread(target=shut_down, name="otel-shutdown", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(done), _SHUTDOWN_WAIT_S)
    except TimeoutError:
        log.warning("spans still queued were not sent before the server stopped")


def _one_line(span: ReadableSpan) -> str:
    return str(span.to_json(indent=None)) + "\n"


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
