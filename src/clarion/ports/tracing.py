"""What the services tell an operator's traces: spans around the steps of a request, and the
trace context carried to another task or another replica.

The OpenTelemetry adapter (`clarion.server.tracing`) implements it, and only when `[telemetry]` is
configured; everywhere else the no-op `NO_TRACER` stands in. The services and the edges never
import OpenTelemetry, so a server without telemetry never loads its SDK or exporter
(import-linter rules hold this).

The no-op is on the live answer path, so it costs as little as a context manager can: `span`
returns one shared object, the ids are named keyword parameters (no `**kwargs` dict per call),
and `carrier()` returns one shared empty mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from types import MappingProxyType, TracebackType
from typing import Protocol

AttributeValue = str | int | float | bool

# A trace context as text headers (W3C `traceparent`, `tracestate`): what travels in a NATS
# request's headers, or with a live delivery to the waiter that confirms it.
Carrier = Mapping[str, str]

NO_CONTEXT: Carrier = MappingProxyType({})


def no_context() -> Carrier:
    """`NO_CONTEXT`, as a dataclass field's default (a shared mapping, never a new one)."""
    return NO_CONTEXT


class Span(Protocol):
    def set(self, key: str, value: AttributeValue | None) -> None:
        """Record one attribute (`outcome`, an id learnt mid-way); None records nothing."""


class Tracer(Protocol):
    def span(
        self,
        name: str,
        *,
        parent: Carrier | None = None,
        task_id: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        pending_id: str | None = None,
    ) -> AbstractContextManager[Span]:
        """A span around the `with` block, the child of the current span, or of the span in
        `parent` (a carrier from `carrier()`, in another task or on another replica). The ids
        given become attributes. An exception leaving the block marks the span failed and,
        unless `outcome` was set, names it as the outcome."""
        ...

    def carrier(self) -> Carrier:
        """The current trace context, to hand to `span(parent=...)` elsewhere (inject)."""
        ...

    def continuing(self, carrier: Carrier) -> AbstractContextManager[None]:
        """Inside the block, the trace in `carrier` (a caller's `traceparent`) is the current
        one, without a span of its own: the spans the block makes continue the caller's trace.
        A carrier with no valid trace context changes nothing."""
        ...


class _NoSpan:
    """Enters and leaves, and records nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def set(self, key: str, value: AttributeValue | None) -> None:
        return None


_NO_SPAN = _NoSpan()
_NO_BLOCK: nullcontext[None] = nullcontext()  # reusable: enters and leaves, holds nothing


class NoTracer:
    """Traces nothing: the default of every service, and the server's without `[telemetry]`."""

    __slots__ = ()

    def span(
        self,
        name: str,
        *,
        parent: Carrier | None = None,
        task_id: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        pending_id: str | None = None,
    ) -> _NoSpan:
        return _NO_SPAN

    def carrier(self) -> Carrier:
        return NO_CONTEXT

    def continuing(self, carrier: Carrier) -> nullcontext[None]:
        return _NO_BLOCK


NO_TRACER: Tracer = NoTracer()
