"""What `clarion.server.wiring.build` returns: the built services, and the background jobs a
server starts once its recovery is done.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from clarion.api.services import ApiServices
from clarion.clarification.deadlines import DeadlineScheduler
from clarion.clarification.waiters import LiveWaiters
from clarion.mcp.tools import McpEndpoint
from clarion.metrics import PrometheusMetrics
from clarion.orchestrator.recovery import StartupRecovery
from clarion.orchestrator.watchdog import Watchdogs
from clarion.ports import AgentRuntime, Bus
from clarion.ports.ownership import Ownership
from clarion.ports.tracing import Tracer
from clarion.runtime.supervisor import Supervisor
from clarion.slack.answerer import SlackAnswerer
from clarion.store import Stores


@dataclass(eq=False)
class App:
    services: ApiServices
    mcp: McpEndpoint
    recovery: StartupRecovery
    watchdogs: Watchdogs
    # Each port's object, as the services were handed them one by one: for the server's
    # tests, which look at rows through them. No service holds this.
    stores: Stores
    runtime: AgentRuntime
    bus: Bus
    waiters: LiveWaiters
    # Cluster mode: ownership, adoption and routing queries (ports/ownership.py).
    ownership: Ownership
    deadlines: DeadlineScheduler
    metrics: PrometheusMetrics
    supervisor: Supervisor
    # `[telemetry]`'s tracer (the no-op without it); cluster mode traces carried requests.
    tracer: Tracer
    # `[retention]`: the background prune, started after recovery (None: not configured).
    retention: Callable[[], Coroutine[Any, Any, None]] | None = None
    # `[notifications.slack]`: the answerer of queued clicks, which an adopting replica tells
    # of the sessions it adopted (None: Slack not configured).
    slack_answerer: SlackAnswerer | None = None

    def start_deadlines(self, owner: str | None) -> None:
        """Fire waiting-policy deadlines from now on (after startup recovery): every
        session's on a single server, the sessions replica `owner` runs in a cluster."""
        self.supervisor.spawn(self.deadlines.run(owner), name="deadline-scheduler")

    def start_retention(self) -> None:
        if self.retention is not None:
            self.supervisor.spawn(self.retention(), name="retention")
