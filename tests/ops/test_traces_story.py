"""Traces after a scripted story on the real services (in process, a scripted agent runtime),
exported to memory: each kind of span appears, with its ids, its outcome and its place in the
trace."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from clarion.config.telemetry import TelemetrySettings
from clarion.config.webhooks import DeliveryPolicy, Webhook
from clarion.server.tracing import otel_tracer
from tests.lifecycle.harness import (
    SKIP,
    Lifecycle,
    answer_db,
    detached_question,
    fast_settings,
    lifecycle_on,
)
from tests.ops.traced import attributes, children, spans_named
from tests.ports import free_port


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[tuple[Lifecycle, InMemorySpanExporter]]:
    # A webhook nobody listens on: its attempt fails and is retried.
    settings = dataclasses.replace(
        fast_settings(f"sqlite:///{tmp_path / 'c.db'}"),
        webhooks=(Webhook(url=f"http://127.0.0.1:{free_port()}/hook", secret="s" * 20),),
        delivery_policy=DeliveryPolicy(backoff_s=60.0, timeout_s=5.0),
    )
    exporter = InMemorySpanExporter()
    async with (
        otel_tracer(TelemetrySettings(exporter="console"), exporter) as tracer,
        lifecycle_on(settings, tracer=tracer) as life,
    ):
        yield life, exporter


def _about(spans: list[ReadableSpan], pending_id: str) -> ReadableSpan:
    (span,) = [s for s in spans if attributes(s).get("pending_id") == pending_id]
    return span


async def test_a_live_answer_is_one_trace_of_claim_deliver_confirm_and_publish(
    traced: tuple[Lifecycle, InMemorySpanExporter],
) -> None:
    life, exporter = traced
    task_id, session_id = await life.start_session()
    (start,) = await spans_named(exporter, "agent.start")
    assert attributes(start) == {
        "task_id": task_id,
        "session_id": session_id,
        "agent": "builtin",
        "outcome": "started",
        "turn_id": attributes(start)["turn_id"],
    }

    call, pending_id = await life.ask(session_id)
    await life.app.services.resolver.respond(pending_id, answer_db())
    await call

    (ask,) = await spans_named(exporter, "ask")
    turn_id = attributes(ask)["turn_id"]
    assert attributes(ask) == {
        "task_id": task_id,
        "session_id": session_id,
        "turn_id": turn_id,
        "pending_id": pending_id,
        "outcome": "answered",
    }
    (respond,) = await spans_named(exporter, "respond")
    assert attributes(respond) == {
        "pending_id": pending_id,
        "rejected": False,
        "task_id": task_id,
        "session_id": session_id,
        "turn_id": turn_id,
        "outcome": "delivered",
    }
    spans = await _settled(exporter)
    assert children(spans, respond) == ["claim", "deliver", "publish"]
    (deliver,) = [s for s in spans if s.name == "deliver"]
    assert children(spans, deliver) == ["confirm"]
    (confirm,) = [s for s in spans if s.name == "confirm"]
    assert attributes(confirm) == {
        "session_id": session_id,
        "turn_id": turn_id,
        "pending_id": pending_id,
        "outcome": "confirmed",
    }
    (claim,) = [s for s in spans if s.name == "claim"]
    assert attributes(claim) == {"pending_id": pending_id, "outcome": "claimed"}
    assert attributes(deliver)["outcome"] == "confirmed"


async def test_a_detached_answer_resumes_and_a_detached_skip_is_confirmed(
    traced: tuple[Lifecycle, InMemorySpanExporter],
) -> None:
    life, exporter = traced
    _, session_id = await life.start_session()
    answered = await detached_question(life, session_id)
    await life.app.services.resolver.respond(answered, answer_db())
    await life.runtime.wait_for_prompts(2)
    skipped = await detached_question(life, session_id)
    await life.app.services.resolver.respond(skipped, SKIP)
    with pytest.raises(Exception, match="no longer active"):
        await life.app.services.resolver.respond(skipped, answer_db())

    responds = await spans_named(exporter, "respond", 3)
    spans = await _settled(exporter, publications=2)
    resumed, rejected = _about(responds[:2], answered), _about(responds[:2], skipped)
    assert attributes(resumed)["outcome"] == "resumed"
    assert children(spans, resumed) == ["claim", "resume", "publish"]
    (resume,) = [s for s in spans if s.name == "resume"]
    assert attributes(resume)["session_id"] == session_id
    assert attributes(resume)["turn_id"]  # the successor turn the agent accepted

    assert attributes(rejected)["outcome"] == "rejected"
    assert attributes(rejected)["rejected"] is True
    assert children(spans, rejected) == ["claim", "confirm", "publish"]
    # Both asks detached: the tool call ended without an answer.
    asks = await spans_named(exporter, "ask", 2)
    assert {attributes(a)["outcome"] for a in asks} == {"detached"}

    late = responds[2]
    assert attributes(late)["outcome"] == "NotActive"
    assert children(spans, late) == []  # refused before any claim


async def test_a_webhook_attempt_is_a_span_with_its_delivery_and_outcome(
    traced: tuple[Lifecycle, InMemorySpanExporter],
) -> None:
    life, exporter = traced
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    (send,) = await spans_named(exporter, "webhook.send")
    recorded = attributes(send)
    url = str(recorded.pop("url"))
    assert url.startswith("http://127.0.0.1:") and url.endswith("/hook")
    assert str(recorded.pop("delivery_id"))
    assert recorded == {"event": "clarification.requested", "attempt": 1, "outcome": "retry"}
    assert pending_id
    call.cancel()


async def _settled(exporter: InMemorySpanExporter, publications: int = 1) -> list[ReadableSpan]:
    """Every span, once the background publications have ended."""
    await spans_named(exporter, "publish", publications)
    return list(exporter.get_finished_spans())
