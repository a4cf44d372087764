"""A caller's trace continued: an HTTP request with a W3C `traceparent` header makes its spans
(`respond` and its steps, a new session's `agent.start`) part of the caller's trace, on the
real services and HTTP application in process, exported to memory. Without the header, or with
a malformed one, they start a trace of their own; with tracing off no header is read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.api.app import create_app
from clarion.api.trace_context import with_trace_context
from clarion.config.telemetry import TelemetrySettings
from clarion.ports.tracing import NO_TRACER
from clarion.server.tracing import otel_tracer
from tests.lifecycle.harness import Lifecycle, answer_db, fast_settings, lifecycle_on
from tests.ops.traced import attributes, child_of, spans_named

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@dataclass
class Traced:
    life: Lifecycle
    exporter: InMemorySpanExporter
    http: httpx.AsyncClient


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[Traced]:
    exporter = InMemorySpanExporter()
    settings = fast_settings(f"sqlite:///{tmp_path / 'c.db'}")
    async with (
        otel_tracer(TelemetrySettings(exporter="console"), exporter) as tracer,
        lifecycle_on(settings, tracer=tracer) as life,
    ):
        asgi = with_trace_context(create_app(life.app.services, life.app.mcp), tracer)
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://clarion") as http:
            yield Traced(life, exporter, http)


async def _answer(traced: Traced, headers: dict[str, str]) -> str:
    """A live question answered over HTTP with these headers; returns its pending id."""
    _, session_id = await traced.life.start_session()
    call, pending_id = await traced.life.ask(session_id)
    reply = await traced.http.post(
        f"/api/v1/clarification/{pending_id}/respond", json=answer_db(), headers=headers
    )
    assert reply.status_code == 200, reply.text
    await call
    return pending_id


async def test_an_answers_respond_span_continues_the_callers_trace(traced: Traced) -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=opaque"}
    pending_id = await _answer(traced, headers)

    (respond,) = await spans_named(traced.exporter, "respond")
    assert attributes(respond)["pending_id"] == pending_id
    assert format(respond.context.trace_id, "032x") == CALLER_TRACE
    assert respond.parent is not None and respond.parent.is_remote
    assert format(respond.parent.span_id, "016x") == CALLER_SPAN
    assert respond.context.trace_state.get("vendor") == "opaque", "tracestate goes on too"
    # Its steps stay its children, in the caller's trace.
    await spans_named(traced.exporter, "publish")
    spans = traced.exporter.get_finished_spans()
    for step in ("claim", "deliver", "publish"):
        (span,) = [s for s in spans if s.name == step]
        assert child_of(span, respond), step


async def test_a_new_sessions_agent_start_continues_the_callers_trace(traced: Traced) -> None:
    created = await traced.http.post("/api/v1/tasks", json={"title": "t", "description": ""})
    task_id = created.json()["task"]["id"]
    started = await traced.http.post(
        f"/api/v1/tasks/{task_id}/task-sessions",
        json={"agent": "builtin", "prompt": "work on it"},
        headers={"traceparent": TRACEPARENT},
    )
    assert started.status_code == 201, started.text

    (start,) = await spans_named(traced.exporter, "agent.start")
    assert attributes(start)["task_id"] == task_id
    assert format(start.context.trace_id, "032x") == CALLER_TRACE
    assert start.parent is not None and format(start.parent.span_id, "016x") == CALLER_SPAN


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-header"),
        pytest.param({"traceparent": "00-not-a-trace-01"}, id="malformed"),
        pytest.param({"traceparent": f"00-{'0' * 32}-{CALLER_SPAN}-01"}, id="zero-trace-id"),
    ],
)
async def test_without_a_valid_traceparent_respond_starts_a_trace_of_its_own(
    traced: Traced, headers: dict[str, str]
) -> None:
    await _answer(traced, headers)
    (respond,) = await spans_named(traced.exporter, "respond")
    assert respond.parent is None
    assert format(respond.context.trace_id, "032x") != CALLER_TRACE


async def test_with_tracing_off_the_application_is_served_as_it_is() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    plain: ASGIApp = app
    assert with_trace_context(plain, NO_TRACER) is plain
