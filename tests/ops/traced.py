"""Reading what a test's in-memory exporter holds: the finished spans by name, waiting for the
ones that end in a background task (a publication, a webhook attempt)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

CEILING_S = 60.0


async def spans_named(
    exporter: InMemorySpanExporter, name: str, count: int = 1, within: float = CEILING_S
) -> list[ReadableSpan]:
    """The finished spans called `name`, once there are at least `count` of them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        found = [s for s in exporter.get_finished_spans() if s.name == name]
        if len(found) >= count:
            return found
        if loop.time() > deadline:
            names = [s.name for s in exporter.get_finished_spans()]
            raise AssertionError(f"{count} {name!r} span(s) never ended; ended: {names}")
        await asyncio.sleep(0.01)


def attributes(span: ReadableSpan) -> dict[str, object]:
    """The span's Clarion attributes, without their `clarion.` prefix."""
    return {
        key.removeprefix("clarion."): value
        for key, value in (span.attributes or {}).items()
        if key.startswith("clarion.")
    }


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        span.parent is not None
        and span.parent.span_id == parent.context.span_id
        and span.context.trace_id == parent.context.trace_id
    )


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan) -> list[str]:
    """The names of `parent`'s children among `spans`, in the order they started."""
    return [s.name for s in sorted(spans, key=lambda s: s.start_time or 0) if child_of(s, parent)]
