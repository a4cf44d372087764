"""One trace across two replicas: an answer sent to the replica that does not own its session
is carried over NATS to the owner, whose spans continue the carrying replica's trace.

Two replicas in process, each the real services on one PostgreSQL database, joined as a server
joins (membership, NATS request-reply, cluster routing), each with a scripted agent runtime
and a tracer exporting to its own memory."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.types import ASGIApp

from clarion.api.app import create_app
from clarion.config import AgentProfile
from clarion.config.telemetry import TelemetrySettings
from clarion.ports import AgentSink
from clarion.server.cluster import cluster_mode
from clarion.server.tracing import otel_tracer
from clarion.server.wiring import App, build
from tests.bus.conftest import NATS_URL, require_nats
from tests.lifecycle.harness import ASK_DB, ScriptedRuntime, answer_db, fast_settings
from tests.ops.traced import attributes, child_of, children, spans_named

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

CEILING_S = 60.0


@dataclass
class Replica:
    app: App
    routed: ASGIApp
    exporter: InMemorySpanExporter
    replica_id: str


@contextlib.asynccontextmanager
async def _replica(database_url: str, name: str) -> AsyncIterator[Replica]:
    """A replica's start as `clarion serve --cluster` runs it, without the HTTP listener."""
    settings = dataclasses.replace(
        fast_settings(database_url, live_confirm=CEILING_S),
        cluster=True,
        bus_url=NATS_URL,
    )
    exporter = InMemorySpanExporter()
    telemetry = TelemetrySettings(exporter="console", service_name=name)

    def runtime(profiles: Mapping[str, AgentProfile], sink: AgentSink) -> ScriptedRuntime:
        return ScriptedRuntime(profiles, sink)

    async with (
        cluster_mode(settings) as mode,
        otel_tracer(telemetry, exporter) as tracer,
        build(settings, lambda: "http://x.invalid", runtime_factory=runtime, tracer=tracer) as app,
    ):
        joined, routed = await mode.attach(
            app, create_app(app.services, app.mcp), settings, lambda: 0
        )
        await joined.replica.join(f"http://{name}.invalid")
        joined.own_sessions()
        await app.recovery.run(await joined.adopt_orphans())
        app.services.ready.set()
        await joined.replica.serving()
        yield Replica(app, routed, exporter, joined.replica.replica_id)


async def _asked(owner: Replica, session_id: str) -> tuple[asyncio.Task[str], str]:
    """The agent's waiting tool call on the owner, and its question's pending id."""

    async def progress(message: str) -> None:
        return None

    call = asyncio.create_task(owner.app.services.asker.ask(session_id, ASK_DB, progress))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CEILING_S
    while not (ready := [w for w in owner.app.waiters.for_session(session_id) if w.questions]):
        assert not call.done(), call.result()
        assert loop.time() < deadline, "the question was never asked"
        await asyncio.sleep(0.01)
    return call, ready[0].pending_id


async def test_an_answer_carried_to_the_owner_is_one_trace_across_both_replicas(
    new_database_url: Callable[[str], str],
) -> None:
    require_nats()
    url = new_database_url("postgres")
    async with _replica(url, "carrier") as carrier, _replica(url, "owner") as owner:
        services = owner.app.services
        task = await services.tasks.create(title="t", description="", workspace=None)
        session = await services.sessions.start(
            task.id, agent="builtin", prompt="work on it", is_primary=True
        )
        call, pending_id = await _asked(owner, session.id)

        # The answer reaches the replica that does not run the session.
        transport = httpx.ASGITransport(app=carrier.routed)
        async with httpx.AsyncClient(transport=transport, base_url="http://carrier") as client:
            reply = await client.post(
                f"/api/v1/clarification/{pending_id}/respond", json=answer_db(), timeout=CEILING_S
            )
        assert reply.status_code == 200, reply.text
        await asyncio.wait_for(call, CEILING_S)

        (carry,) = await spans_named(carrier.exporter, "request.carry")
        (carried,) = await spans_named(owner.exporter, "request.carried")
        (respond,) = await spans_named(owner.exporter, "respond")
        await spans_named(owner.exporter, "publish")

    assert attributes(carry) == {
        "replica": owner.replica_id,
        "path": f"/api/v1/clarification/{pending_id}/respond",
        "outcome": 200,
    }
    assert attributes(carried) == {
        "replica": owner.replica_id,
        "path": f"/api/v1/clarification/{pending_id}/respond",
        "outcome": 200,
    }
    # One trace: the owner's span is the carrier's child, across the NATS hop.
    assert carried.context.trace_id == carry.context.trace_id
    assert carried.parent is not None and carried.parent.is_remote
    assert carried.parent.span_id == carry.context.span_id
    assert child_of(respond, carried)
    assert attributes(respond)["pending_id"] == pending_id
    assert attributes(respond)["session_id"] == session.id
    assert attributes(respond)["outcome"] == "delivered"
    spans = owner.exporter.get_finished_spans()
    assert children(spans, respond) == ["claim", "deliver", "publish"]
    in_trace = sorted(s.name for s in spans if s.context.trace_id == carry.context.trace_id)
    assert in_trace == ["claim", "confirm", "deliver", "publish", "request.carried", "respond"]
    # The carrier only carried: the answer's own steps ran on the owner.
    assert not [s for s in carrier.exporter.get_finished_spans() if s.name == "respond"]
