"""The composition root: the one module that knows every implementation.

`run_server` opens the store and the bus, builds the services, binds HTTP, runs startup
recovery and only then admits work. A recovery failure stops the server and is reported to
the caller, which exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass

import uvicorn

from clarion import failpoints
from clarion.agents.runtime import AcpRuntime
from clarion.api.app import create_app
from clarion.api.services import ApiServices
from clarion.bus import open_bus
from clarion.clarification.asker import Asker, AskLimits
from clarion.clarification.canceller import ClarificationCanceller
from clarion.clarification.resolver import Resolver
from clarion.clarification.waiters import LiveWaiters
from clarion.clock import SystemClock
from clarion.cluster_mode import cluster_mode, until_leading
from clarion.config import AgentProfile, Settings
from clarion.domain.permissions import PermissionRules
from clarion.mcp.tools import McpEndpoint, build_mcp_server
from clarion.orchestrator.access import AccessControl
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.agent_events import AgentEvents
from clarion.orchestrator.failures import AgentFailures
from clarion.orchestrator.handoffs import OrchestratorHandoffs
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.launch import Launcher, SessionTokens
from clarion.orchestrator.permissions import PermissionService
from clarion.orchestrator.recovery import RecoveryReport, StartupRecovery
from clarion.orchestrator.resend import AnswerResender
from clarion.orchestrator.resume import DetachedResume
from clarion.orchestrator.sessions import SessionService
from clarion.orchestrator.tasks import TaskService
from clarion.orchestrator.watchdog import Watchdogs
from clarion.orchestrator.workflow import WorkflowGuard
from clarion.ports import (
    AgentExited,
    AgentOutput,
    AgentRuntime,
    AgentSink,
    Bus,
    Clock,
    PermissionAsk,
    PromptFinished,
    Store,
)
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector
from clarion.projection.reads import Reads
from clarion.projection.summaries import SummaryService
from clarion.sample import offer_sample_task
from clarion.store import SqlStore, open_store
from clarion.store.guard import AnotherServer, single_server
from clarion.store.outbox import Outbox
from clarion.supervisor import Supervisor
from clarion.webhooks.deliverer import WebhookDeliverer
from clarion.webhooks.sender import http_sender

try:  # the C HTTP parser where installed (a dependency on Linux and macOS); h11 otherwise
    import httptools  # noqa: F401

    _HTTP_PROTOCOL = "httptools"
except ImportError:
    _HTTP_PROTOCOL = "h11"

log = logging.getLogger(__name__)


__all__ = ["AnotherServer", "App", "RecoveryFailed", "build", "run_server"]


class RecoveryFailed(Exception):
    """Startup recovery failed; the server did not admit any work."""


class _LateSink:
    """The runtime needs a sink before the services that implement it exist."""

    target: AgentEvents | None = None

    async def on_output(self, output: AgentOutput) -> None:
        if self.target is not None:
            await self.target.on_output(output)

    async def on_prompt_finished(self, finished: PromptFinished) -> None:
        if self.target is not None:
            await self.target.on_prompt_finished(finished)

    async def on_agent_exited(self, exited: AgentExited) -> None:
        if self.target is not None:
            await self.target.on_agent_exited(exited)

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        if self.target is None:
            return None
        return await self.target.on_permission(ask)


@dataclass(eq=False)
class App:
    services: ApiServices
    mcp: McpEndpoint
    recovery: StartupRecovery
    watchdogs: Watchdogs
    store: Store
    runtime: AgentRuntime
    bus: Bus
    waiters: LiveWaiters
    # Cluster mode: take the next leadership epoch and fence every session write with it.
    claim_leadership: Callable[[str, Callable[[str], None]], Awaitable[int]]


RuntimeFactory = Callable[
    [Mapping[str, AgentProfile], AgentSink], contextlib.AbstractAsyncContextManager[AgentRuntime]
]


@contextlib.asynccontextmanager
async def build(
    settings: Settings,
    base_url: Callable[[], str],
    *,
    runtime_factory: RuntimeFactory = AcpRuntime,
    store_wrapper: Callable[[Store], Store] | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[App]:
    """Open every resource and wire the services; close them all on exit.

    Tests may swap the agent runtime (the port agents sit behind), wrap the store to inject
    failures and drive time with a manual clock; production uses the defaults."""
    failpoints.configure(settings.failpoints)
    clock = clock or SystemClock()
    t = settings.timeouts
    sink = _LateSink()
    async with (
        open_store(settings.database_url, clock) as sql_store,
        open_bus(settings.bus_url) as bus,
        Supervisor() as supervisor,
        _webhooks(settings, sql_store, clock, base_url, supervisor),
        runtime_factory(settings.agents, sink) as runtime,
    ):
        store: Store = sql_store if store_wrapper is None else store_wrapper(sql_store)
        projector = PendingProjector(store)
        summaries = SummaryService(store, bus)
        publisher = EventPublisher(bus, projector, summaries)
        lanes = Lanes()
        tokens = SessionTokens()
        failures = AgentFailures(store=store, publisher=publisher)
        admission = TurnAdmission(
            store, runtime, publisher, lanes, Launcher(tokens, base_url), failures
        )
        permissions = PermissionService(
            store=store, publisher=publisher, lanes=lanes, rules=permission_rules(settings)
        )
        waiters = LiveWaiters()
        canceller = ClarificationCanceller(store, publisher, waiters, supervisor, t.persist)
        watchdogs = Watchdogs(
            store=store,
            runtime=runtime,
            lanes=lanes,
            admission=admission,
            supervisor=supervisor,
            watchdog_s=t.watchdog,
            persist_s=t.persist,
            clock=clock,
        )
        resume = DetachedResume(
            store=store,
            runtime=runtime,
            publisher=publisher,
            lanes=lanes,
            admission=admission,
            resume_accept_s=t.resume_accept,
            persist_s=t.persist,
        )

        resolver = Resolver(
            store=store,
            waiters=waiters,
            publisher=publisher,
            supervisor=supervisor,
            clock=clock,
            handoffs=OrchestratorHandoffs(resume, watchdogs),
            live_confirm_s=t.live_confirm,
            persist_s=t.persist,
        )

        asker = Asker(
            store,
            waiters,
            publisher,
            canceller,
            AskLimits(wait_s=t.clarification_wait, keepalive_s=t.keepalive),
            clock,
        )
        sessions = SessionService(
            store=store,
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
            store=store,
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
        services = ApiServices(
            tasks=TaskService(store, bus),
            reads=Reads(store, projector, summaries, waiters.has),
            sessions=sessions,
            admission=admission,
            resolver=resolver,
            resender=AnswerResender(
                store=store,
                admission=admission,
                publisher=publisher,
                lanes=lanes,
                resume_accept_s=t.resume_accept,
                persist_s=t.persist,
            ),
            canceller=canceller,
            workflow=WorkflowGuard(store),
            asker=asker,
            tokens=tokens,
            projector=projector,
            bus=bus,
            access=AccessControl(store, enabled=settings.auth),
            permissions=permissions,
        )
        try:
            yield App(
                services=services,
                mcp=McpEndpoint(build_mcp_server(asker), tokens),
                recovery=StartupRecovery(store, projector, publisher),
                watchdogs=watchdogs,
                store=store,
                runtime=runtime,
                bus=bus,
                waiters=waiters,
                claim_leadership=sql_store.claim_leadership,
            )
        finally:
            watchdogs.cancel_all()


@contextlib.asynccontextmanager
async def _webhooks(
    settings: Settings,
    store: SqlStore,
    clock: Clock,
    base_url: Callable[[], str],
    supervisor: Supervisor,
) -> AsyncIterator[None]:
    """With `[[webhooks]]` configured: the store queues deliveries and a supervised deliverer
    sends them. Without, nothing is queued and nothing runs."""
    if not settings.webhooks:
        yield
        return
    policy = settings.webhook_delivery
    async with http_sender(policy.timeout_s) as send:
        deliverer = WebhookDeliverer(store, clock, settings.webhooks, policy, send)
        store.configure_webhooks(
            Outbox(
                hooks=tuple((h.url, h.events) for h in settings.webhooks),
                base_url=lambda: settings.public_url or base_url(),
                wake=deliverer.wake,
            )
        )
        running = supervisor.spawn(deliverer.run(), name="webhook-deliverer")
        try:
            yield
        finally:
            running.cancel()


async def run_server(
    settings: Settings, on_listening: Callable[[str], None]
) -> RecoveryReport | None:
    """Serve until stopped. Raises RecoveryFailed if startup recovery fails. A cluster replica
    stopped while still standby never ran recovery and returns None."""
    base = {"url": f"http://{_client_host(settings.host)}:{settings.port}"}
    async with contextlib.AsyncExitStack() as stack:
        # Before anything touches the database: a second server's recovery would detach the
        # first one's live questions. Raises AnotherServer (the CLI exits 3) when one is running.
        cluster = None
        if settings.cluster:
            cluster = await stack.enter_async_context(cluster_mode(settings))
        else:
            await stack.enter_async_context(single_server(settings.database_url))
        # Agents reach their MCP endpoint at the address peers know this replica by.
        app = await stack.enter_async_context(
            build(settings, lambda: settings.advertise_url or base["url"])
        )
        asgi = create_app(app.services, app.mcp)
        replica = None
        if cluster is not None:
            replica = await cluster.attach(
                app.services, asgi, settings, lambda: _running_count(app.runtime)
            )
        config = uvicorn.Config(
            asgi,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            access_log=False,  # request lines could carry a `?token=`
            lifespan="on",
            http=_HTTP_PROTOCOL,
            # Notifications are small JSON frames sent once per connection each: compressing
            # every one cost more server CPU than any other step of sending it.
            ws_per_message_deflate=False,
        )
        server = uvicorn.Server(config)
        serving = asyncio.ensure_future(server.serve())
        beats: asyncio.Future[None] | None = None
        try:
            while not server.started:
                if serving.done():
                    await serving
                    raise RecoveryFailed("HTTP server stopped before it started listening")
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            base["url"] = f"http://{_client_host(settings.host)}:{port}"
            on_listening(base["url"])
            if replica is not None:
                await replica.join(settings.advertise_url or base["url"])
                beats = asyncio.ensure_future(replica.heartbeats())
                if not await until_leading(replica, serving):
                    return None
                await app.claim_leadership(replica.replica_id, replica.stop_fenced)
            try:
                report = await app.recovery.run()
            except Exception as exc:
                log.exception("startup recovery failed")
                raise RecoveryFailed(f"startup recovery failed: {exc}") from exc
            _freeze_startup_heap()
            app.services.ready.set()
            # First start on an empty database: a sample task that asks (clarion.sample).
            await offer_sample_task(app.services)
            await serving
            return report
        finally:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await serving
            if beats is not None:
                beats.cancel()
                with contextlib.suppress(BaseException):
                    await beats


def _running_count(runtime: AgentRuntime) -> int:
    """Sessions whose agent runs here; only the ACP runtime counts them (0 for test doubles)."""
    count = getattr(runtime, "running_count", None)
    return int(count()) if callable(count) else 0


def permission_rules(settings: Settings) -> dict[str, PermissionRules]:
    """Each profile's `[agents.NAME.permissions]`. The built-in agent asks for every kind."""
    return {
        name: PermissionRules(
            allow=frozenset(profile.permissions_allow),
            reject=frozenset(profile.permissions_reject),
        )
        for name, profile in settings.agents.items()
    }


def _freeze_startup_heap() -> None:
    """What start-up built (modules, the app, compiled statements) lives as long as the
    process. Taking it out of the collector's view keeps full collections short: over it,
    each took about 150 ms here, stalling every request in flight."""
    collected = gc.collect()
    gc.freeze()
    log.info(
        "start-up heap frozen",
        extra={"collected": collected, "frozen": gc.get_freeze_count()},
    )


def _client_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
