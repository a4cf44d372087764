"""The OpenTelemetry adapter (clarion/server/tracing.py) and the no-op default
(ports/tracing.py): what a span records, how a trace is continued from a carrier, what the
console exporter prints, and that the no-op records nothing and costs no object per span."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, StatusCode, TraceState
from opentelemetry.util.types import Attributes

from clarion.config import Settings
from clarion.config.telemetry import TelemetrySettings
from clarion.domain.errors import NotActive
from clarion.ports.tracing import NO_CONTEXT, NO_TRACER
from clarion.server.tracing import OtelTracer, otel_tracer, provider_for
from clarion.server.wiring import build

CONSOLE = TelemetrySettings(exporter="console", service_name="clarion-test")


@pytest.fixture
async def traced() -> AsyncIterator[tuple[OtelTracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    async with otel_tracer(CONSOLE, exporter) as tracer:
        yield tracer, exporter


async def test_a_span_records_its_ids_and_outcome_under_the_clarion_prefix(
    traced: tuple[OtelTracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = traced
    with tracer.span("respond", pending_id="p1", session_id="s1") as span:
        span.set("outcome", "delivered")
        span.set("turn_id", None)  # nothing known: nothing recorded
        with tracer.span("claim", pending_id="p1"):
            pass
    claim, respond = exporter.get_finished_spans()
    assert respond.name == "respond" and claim.name == "claim"
    assert dict(respond.attributes or {}) == {
        "clarion.pending_id": "p1",
        "clarion.session_id": "s1",
        "clarion.outcome": "delivered",
    }
    assert claim.parent is not None and claim.parent.span_id == respond.context.span_id
    assert claim.context.trace_id == respond.context.trace_id
    assert respond.resource.attributes["service.name"] == "clarion-test"


async def test_a_span_starts_when_its_block_is_entered_and_is_current_only_inside_it(
    traced: tuple[OtelTracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = traced
    block = tracer.span("respond", pending_id="p1", turn_id="t1")
    assert not exporter.get_finished_spans() and not tracer.carrier(), "nothing started yet"
    with block as span:
        inside = dict(tracer.carrier())
        span.set("turn_id", "t2")  # an id learnt mid-way replaces the one given
        span.set("rejected", False)
    assert not tracer.carrier(), "the span is no longer current after the block"
    (respond,) = exporter.get_finished_spans()
    assert inside["traceparent"].split("-")[2] == f"{respond.context.span_id:016x}"
    assert dict(respond.attributes or {}) == {
        "clarion.pending_id": "p1",
        "clarion.turn_id": "t2",
        "clarion.rejected": False,
    }
    assert respond.start_time is not None and respond.end_time is not None


def test_the_sampler_sees_the_ids_a_span_starts_with() -> None:
    # A sampler configured through the SDK (OTEL_TRACES_SAMPLER) decides at the start, from
    # what the span has then: the ids are given to it, the outcome is not known yet.
    seen: list[dict[str, object]] = []

    class Recording(Sampler):
        def should_sample(
            self,
            parent_context: Context | None,
            trace_id: int,
            name: str,
            kind: SpanKind | None = None,
            attributes: Attributes = None,
            links: Sequence[Link] | None = None,
            trace_state: TraceState | None = None,
        ) -> SamplingResult:
            seen.append(dict(attributes or {}))
            return SamplingResult(Decision.DROP)

        def get_description(self) -> str:
            return "Recording"

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=Recording())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with OtelTracer(provider).span("ask", session_id="s1") as span:
        span.set("outcome", "answered")
    assert seen == [{"clarion.session_id": "s1"}]
    assert not exporter.get_finished_spans(), "a dropped span is not exported"


async def test_an_exception_marks_the_span_failed_and_names_the_outcome(
    traced: tuple[OtelTracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = traced
    with pytest.raises(NotActive), tracer.span("respond", pending_id="p1"):
        raise NotActive("no longer active", state="terminal", pending_id="p1")

    def cancelled_ask() -> None:
        with tracer.span("ask") as span:
            span.set("outcome", "detached")
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        cancelled_ask()
    failed, cancelled = exporter.get_finished_spans()
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["clarion.outcome"] == "NotActive"
    assert [e.name for e in failed.events] == ["exception"]
    # An outcome the code set stands; a cancellation is no exception event.
    assert (cancelled.attributes or {})["clarion.outcome"] == "detached"
    assert cancelled.status.status_code is StatusCode.ERROR and not cancelled.events


async def test_a_carrier_continues_the_trace_in_another_task_or_on_another_tracer() -> None:
    here, there = InMemorySpanExporter(), InMemorySpanExporter()
    async with otel_tracer(CONSOLE, here) as sender, otel_tracer(CONSOLE, there) as receiver:
        with sender.span("request.carry"):
            carrier = dict(sender.carrier())
        assert set(carrier) == {"traceparent"}

        async def elsewhere() -> None:
            with receiver.span("request.carried", parent=carrier), receiver.span("respond"):
                pass

        await asyncio.create_task(elsewhere())
        # An empty carrier (nothing was traced where it came from) starts no new trace.
        with receiver.span("outer"), receiver.span("confirm", parent=NO_CONTEXT):
            pass
    (carry,) = here.get_finished_spans()
    respond, carried, confirm, outer = there.get_finished_spans()
    assert carried.context.trace_id == respond.context.trace_id == carry.context.trace_id
    assert carried.parent is not None and carried.parent.span_id == carry.context.span_id
    assert carried.parent.is_remote
    assert respond.parent is not None and respond.parent.span_id == carried.context.span_id
    assert confirm.parent is not None and confirm.parent.span_id == outer.context.span_id


def test_the_console_exporter_prints_each_span_as_it_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    provider = provider_for(CONSOLE)
    tracer = OtelTracer(provider)
    with tracer.span("webhook.send") as span:
        span.set("outcome", "delivered")
    printed = json.loads(capsys.readouterr().out)
    provider.shutdown()
    assert printed["name"] == "webhook.send"
    assert printed["attributes"] == {"clarion.outcome": "delivered"}
    assert printed["resource"]["attributes"]["service.name"] == "clarion-test"


async def test_an_otlp_collector_nobody_runs_does_not_hold_the_shutdown(tmp_path: Path) -> None:
    # Port 9 (discard) refuses: the queued span cannot be sent, and the stop still ends.
    otlp = TelemetrySettings(exporter="otlp", endpoint="http://127.0.0.1:9/v1/traces")
    async with otel_tracer(otlp) as tracer:
        with tracer.span("ask"):
            pass


def test_the_no_op_records_nothing_and_hands_out_one_shared_span() -> None:
    first = NO_TRACER.span("respond", pending_id="p1")
    with first as span:
        span.set("outcome", "delivered")
    assert NO_TRACER.span("claim") is first
    assert NO_TRACER.carrier() is NO_CONTEXT and not NO_CONTEXT
    block = NO_TRACER.continuing({"traceparent": "00-x-y-01"})
    with block:
        pass
    assert NO_TRACER.continuing({}) is block, "one shared block, nothing parsed"


_WITHOUT_TELEMETRY = """
import asyncio, sys
from clarion.cli.app import app
from clarion.config import Settings
from clarion.server.wiring import build

async def main() -> None:
    settings = Settings.load(database_url=sys.argv[1])
    async with build(settings, lambda: "http://127.0.0.1:1") as built:
        print(type(built.tracer).__name__)
    # FastAPI loads the OpenTelemetry API itself; the SDK and the exporter are Clarion's cost.
    prefixes = (
        "clarion.server.tracing",
        "opentelemetry.sdk",
        "opentelemetry.exporter",
        "google.protobuf",
    )
    print(sorted(m for m in sys.modules if m.startswith(prefixes)))

asyncio.run(main())
"""


def test_without_telemetry_the_server_loads_neither_the_adapter_nor_the_sdk(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TELEMETRY, f"sqlite:///{tmp_path / 'c.db'}"],
        env={"CLARION_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["NoTracer", "[]"]


async def test_with_telemetry_configured_the_server_traces_through_the_adapter(
    tmp_path: Path,
) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        telemetry=TelemetrySettings(exporter="console"),
    )
    async with build(settings, lambda: "http://127.0.0.1:1") as built:
        assert isinstance(built.tracer, OtelTracer)
