"""The composition root: the one module that knows every implementation.

`build` opens the store, the bus and the agent runtime and wires the services on them;
`clarion.server.serving` runs a server's life around it (bind, lead, recover, then admit work).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping

from clarion.agents.runtime import AcpRuntime
from clarion.agents.sandbox import sandbox_modes
from clarion.api.services import ApiServices
from clarion.bus import open_bus
from clarion.clarification.asker import Asker, AskLimits
from clarion.clarification.canceller import ClarificationCanceller
from clarion.clarification.deadlines import DeadlineScheduler
from clarion.clarification.live_confirmation import LiveConfirmation
from clarion.clarification.resolver import Resolver
from clarion.clarification.waiters import LiveWaiters
from clarion.config import BUILTIN_PROFILE, AgentProfile, Settings
from clarion.mcp.tools import McpEndpoint, build_mcp_server
from clarion.metrics import MetricsExposition, PrometheusMetrics
from clarion.orchestrator.access import AccessControl
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.agent_events import AgentEvents
from clarion.orchestrator.archive import TaskArchive
from clarion.orchestrator.failures import AgentFailures
from clarion.orchestrator.handoffs import OrchestratorHandoffs
from clarion.orchestrator.idle import IdleStops
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.launch import Launcher, SessionTokens
from clarion.orchestrator.permissions import PermissionService
from clarion.orchestrator.recovery import StartupRecovery
from clarion.orchestrator.resend import AnswerResender
from clarion.orchestrator.resume import DetachedResume
from clarion.orchestrator.reviews import ReviewService
from clarion.orchestrator.sessions import SessionService
from clarion.orchestrator.tasks import TaskService
from clarion.orchestrator.watchdog import Watchdogs
from clarion.orchestrator.workflow import WorkflowGuard
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports import AgentRuntime, AgentSink, Clock
from clarion.ports.tracing import Tracer
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector
from clarion.projection.reads import Reads, running_among
from clarion.projection.summaries import SummaryService
from clarion.projection.waiter_lookup import local_only
from clarion.runtime import failpoints
from clarion.runtime.clock import SystemClock
from clarion.runtime.supervisor import Supervisor
from clarion.server.app import App
from clarion.server.configured import (
    permission_rules,
    retention_job,
    tracing,
    waiting_policies,
)
from clarion.server.late_sink import LateSink
from clarion.server.outgoing import answer_links, outgoing_deliveries
from clarion.server.repositories import task_worktrees
from clarion.server.slack import slack_interactions, slack_outgoing
from clarion.slack.answerer import SlackAnswerer
from clarion.store import Stores, open_store

log = logging.getLogger(__name__)


__all__ = ["App", "build"]


RuntimeFactory = Callable[
    [Mapping[str, AgentProfile], AgentSink], contextlib.AbstractAsyncContextManager[AgentRuntime]
]


@contextlib.asynccontextmanager
async def build(
    settings: Settings,
    base_url: Callable[[], str],
    *,
    runtime_factory: RuntimeFactory = AcpRuntime,
    store_wrapper: Callable[[Stores], Stores] | None = None,
    clock: Clock | None = None,
    tracer: Tracer | None = None,
) -> AsyncIterator[App]:
    """Open every resource and wire the services; close them all on exit.

    Each service is handed the object of the one port it uses (`Stores`), never the whole.
    Tests may swap the agent runtime (the port agents sit behind), wrap the store's objects to
    inject failures (`store_wrapper` gets every port's object and returns them, each
    wrapped), drive time with a manual clock and trace into memory; production uses the
    defaults."""
    failpoints.configure(settings.failpoints)
    clock = clock or SystemClock()
    t = settings.timeouts
    sink = LateSink()
    metrics = PrometheusMetrics()
    async with (
        tracing(settings, tracer) as tracer,
        open_store(
            settings.database_url, clock, migrate_schema=settings.operations.migrate
        ) as sql_store,
        open_bus(settings.bus_url) as bus,
        Supervisor() as supervisor,
        answer_links(settings, sql_store.stores.link_secret, clock, base_url) as links,
        slack_outgoing(
            settings, sql_store.stores.slack, sql_store.stores.lookups, clock, supervisor
        ) as slack,
        outgoing_deliveries(
            settings,
            sql_store.stores.outbox,
            sql_store.configure_outbox,
            clock,
            base_url,
            supervisor,
            metrics,
            links,
            tracer,
            slack,
        ),
        runtime_factory(settings.agents, sink) as runtime,
    ):
        stores = sql_store.stores if store_wrapper is None else store_wrapper(sql_store.stores)
        projector = PendingProjector(stores.reads, shared=settings.cluster)
        summaries = SummaryService(stores.reads, bus)
        publisher = EventPublisher(bus, projector, summaries)
        lanes = Lanes()
        tokens = SessionTokens()
        failures = AgentFailures(store=stores.permissions, publisher=publisher, metrics=metrics)
        permissions = PermissionService(
            store=stores.permissions,
            publisher=publisher,
            lanes=lanes,
            rules=permission_rules(settings),
        )
        waiters = LiveWaiters()
        idle = IdleStops(
            store=stores.turns,
            runtime=runtime,
            lanes=lanes,
            publisher=publisher,
            supervisor=supervisor,
            clock=clock,
            stop_after={name: p.idle_stop_after for name, p in settings.agents.items()},
            held_elsewhere=lambda sid: (
                bool(waiters.for_session(sid)) or permissions.has_pending(sid)
            ),
        )
        # The MCP server is built with the first MCP request, when `asker` below exists, or in
        # the background with the first launch of an agent that connects as it starts: every
        # agent but the built-in one discovers its tools then (some allow only a few seconds),
        # while the built-in agent connects when it first asks.
        mcp = McpEndpoint(lambda: build_mcp_server(asker), tokens)
        launcher = Launcher(
            tokens,
            base_url,
            prepare_tools=lambda profile: None if profile == BUILTIN_PROFILE else mcp.warm(),
        )
        worktrees: TaskWorktrees = task_worktrees(settings, stores.worktrees)
        admission = TurnAdmission(
            stores.turns,
            runtime,
            publisher,
            lanes,
            launcher,
            failures,
            idle,
            metrics,
            tracer,
            worktrees,
        )
        canceller = ClarificationCanceller(
            stores.answers, publisher, waiters, supervisor, t.persist
        )
        resender = AnswerResender(
            store=stores.answers,
            admission=admission,
            publisher=publisher,
            lanes=lanes,
            resume_accept_s=t.resume_accept,
            persist_s=t.persist,
        )
        watchdogs = Watchdogs(
            send_again=resender.send_unread_again,
            store=stores.turns,
            runtime=runtime,
            lanes=lanes,
            admission=admission,
            supervisor=supervisor,
            watchdog_s=t.watchdog,
            persist_s=t.persist,
            clock=clock,
        )
        resume = DetachedResume(
            store=stores.answers,
            runtime=runtime,
            publisher=publisher,
            lanes=lanes,
            admission=admission,
            resume_accept_s=t.resume_accept,
            persist_s=t.persist,
            metrics=metrics,
        )

        handoffs = OrchestratorHandoffs(resume, watchdogs)
        resolver = Resolver(
            store=stores.answers,
            waiters=waiters,
            publisher=publisher,
            supervisor=supervisor,
            clock=clock,
            handoffs=handoffs,
            live_confirm_s=t.live_confirm,
            persist_s=t.persist,
            tracer=tracer,
        )

        scheduler = DeadlineScheduler(
            deadlines=stores.deadlines,
            answers=stores.answers,
            resolver=resolver,
            waiters=waiters,
            clock=clock,
            publisher=publisher,
        )
        asker = Asker(
            stores.answers,
            waiters,
            publisher,
            canceller,
            AskLimits(wait_s=t.clarification_wait, keepalive_s=t.keepalive),
            clock,
            LiveConfirmation(
                store=stores.answers,
                publisher=publisher,
                supervisor=supervisor,
                handoffs=handoffs,
                persist_s=t.persist,
                tracer=tracer,
            ),
            policies=waiting_policies(settings, stores.reads),
            deadline_written=scheduler.asked,
            tracer=tracer,
        )
        sessions = SessionService(
            store=stores.turns,
            runtime=runtime,
            publisher=publisher,
            lanes=lanes,
            admission=admission,
            canceller=canceller,
            watchdogs=watchdogs,
            tokens=tokens,
            known_agents=frozenset(settings.agents),
            permissions=permissions,
        )
        sink.target = AgentEvents(
            store=stores.turns,
            publisher=publisher,
            lanes=lanes,
            admission=admission,
            canceller=canceller,
            watchdogs=watchdogs,
            supervisor=supervisor,
            persist_s=t.persist,
            permissions=permissions,
            failures=failures,
        )
        reads = Reads(
            stores.reads,
            projector,
            summaries,
            live_waiters=local_only(waiters.has),
            agent_running=lambda: running_among(runtime.running_sessions()),
            sandbox_of=sandbox_modes(settings.agents),
        )
        services = ApiServices(
            tasks=TaskService(
                stores.turns,
                bus,
                repositories=worktrees.repositories,
                workspace_repositories=settings.repositories.workspace_defaults,
            ),
            reads=reads,
            sessions=sessions,
            admission=admission,
            resolver=resolver,
            resender=resender,
            canceller=canceller,
            workflow=WorkflowGuard(stores.turns),
            asker=asker,
            tokens=tokens,
            projector=projector,
            bus=bus,
            access=AccessControl(stores.access, enabled=settings.auth),
            permissions=permissions,
            metrics=metrics,
            # Reads answers "which are live" across the cluster once cluster mode is attached.
            exposition=MetricsExposition(
                metrics,
                sql_store.stores.figures,
                reads.live_among,
                ttl_s=settings.operations.metrics_cache_s,
            ),
            metrics_token=settings.operations.metrics_token,
            links=links,
            reviews=ReviewService(
                store=stores.reviews,
                resume=resume,
                publisher=publisher,
                lanes=lanes,
                permission_pending=permissions.has_pending,
                persist_s=t.persist,
            ),
            archive=TaskArchive(
                store=stores.archive, worktrees=worktrees, lanes=lanes, runtime=runtime
            ),
            max_patch_bytes=settings.repositories.max_patch_bytes,
        )
        services.reads.use_answer_links(links.url_for, links.decision_url_for)
        answerer: SlackAnswerer | None = None
        if slack is not None:
            interactions = slack_interactions(
                slack,
                resolver.respond,
                services.access,
                clock,
                supervisor,
                services.ready,
                owner=lambda: None if services.cluster is None else services.cluster.replica_id,
                bus=bus,
            )
            services.slack, answerer = interactions.inbox, interactions.answerer
        try:
            yield App(
                services=services,
                mcp=mcp,
                recovery=StartupRecovery(stores.recovery, projector, publisher, metrics, worktrees),
                watchdogs=watchdogs,
                stores=stores,
                runtime=runtime,
                bus=bus,
                waiters=waiters,
                ownership=stores.ownership,
                deadlines=scheduler,
                supervisor=supervisor,
                metrics=metrics,
                tracer=tracer,
                retention=retention_job(settings, sql_store.stores, clock),
                slack_answerer=answerer,
            )
        finally:
            watchdogs.cancel_all()
