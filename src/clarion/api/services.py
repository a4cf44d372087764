"""What the edges (HTTP, WebSocket, MCP) are given by the composition root."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from clarion.clarification.asker import Asker
from clarion.clarification.canceller import ClarificationCanceller
from clarion.clarification.links import AnswerLinks
from clarion.clarification.resolver import Resolver
from clarion.config.repositories import DEFAULT_MAX_PATCH_BYTES
from clarion.domain.models import Task
from clarion.orchestrator.access import AccessControl
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.archive import TaskArchive
from clarion.orchestrator.launch import SessionTokens
from clarion.orchestrator.permissions import PermissionService
from clarion.orchestrator.resend import AnswerResender
from clarion.orchestrator.reviews import ReviewService
from clarion.orchestrator.sessions import SessionService
from clarion.orchestrator.tasks import TaskService
from clarion.orchestrator.workflow import WorkflowGuard
from clarion.ports import Bus, ClusterView
from clarion.ports.metrics import NO_METRICS, Exposition, Metrics
from clarion.projection.pending import PendingProjector
from clarion.projection.reads import Reads
from clarion.slack.inbox import SlackInbox


@dataclass(eq=False)
class ApiServices:
    tasks: TaskService
    reads: Reads
    sessions: SessionService
    admission: TurnAdmission
    resolver: Resolver
    resender: AnswerResender
    canceller: ClarificationCanceller
    workflow: WorkflowGuard
    asker: Asker
    tokens: SessionTokens
    projector: PendingProjector
    bus: Bus
    access: AccessControl
    permissions: PermissionService
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    # Cluster mode only: this replica and its peers (None in single mode).
    cluster: ClusterView | None = None
    # What the edges record (answers by outcome, respond latency) and `GET /metrics`; a
    # server built without them records nothing and answers /metrics with 404.
    metrics: Metrics = NO_METRICS
    exposition: Exposition | None = None
    # With access control on, a token that may read /metrics and nothing else.
    metrics_token: str | None = None
    # Answer links (`/a/<token>`); None only for an application built without them.
    links: AnswerLinks | None = None
    # Task worktrees (docs/workspaces.md): reviews, archiving, and the per-file patch cap of
    # `GET /tasks/{task_id}/changes`; None only for an application built without them.
    reviews: ReviewService | None = None
    archive: TaskArchive | None = None
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES

    async def store_task(self, task_id: str) -> Task:
        """The task as stored (its worktree row included)."""
        return await self.tasks.get(task_id)

    # `[notifications.slack]`: where Slack's interactions are taken in (None: not configured).
    slack: SlackInbox | None = None
