"""What the composition root takes from the settings for the services it builds: the tracer,
waiting policies, each profile's permission rules and the retention job. Used by
`clarion.server.wiring` only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from clarion.clarification.policies import WaitingPolicies, WorkspaceLookup
from clarion.config import Settings
from clarion.domain.permissions import PermissionRules
from clarion.ports import Clock
from clarion.ports.tracing import NO_TRACER, Tracer
from clarion.server.retention import retention_loop
from clarion.store import Stores
from clarion.workspaces.pruning import remove_orphaned_worktrees


def waiting_policies(settings: Settings, lookup: WorkspaceLookup) -> WaitingPolicies:
    """`[agents.NAME.waiting]` by profile, `[workspaces.NAME.waiting]` and `.roles` by
    workspace."""
    return WaitingPolicies(
        lookup=lookup,
        profiles={
            name: profile.waiting
            for name, profile in settings.agents.items()
            if profile.waiting is not None
        },
        workspaces=dict(settings.workspace_waiting),
        roles=settings.workspace_roles,
    )


def retention_job(
    settings: Settings, stores: Stores, clock: Clock
) -> Callable[[], Coroutine[Any, Any, None]] | None:
    """`[retention]`'s background prune (None: not configured)."""
    ops = settings.operations
    if ops.retention_older_than_s <= 0:
        return None
    return lambda: retention_loop(
        stores.retention,
        clock,
        older_than_s=ops.retention_older_than_s,
        every_s=ops.retention_every_s,
        worktrees=lambda: remove_orphaned_worktrees(stores.worktrees),
    )


def permission_rules(settings: Settings) -> dict[str, PermissionRules]:
    """Each profile's `[agents.NAME.permissions]`. The built-in agent asks for every kind."""
    return {
        name: PermissionRules(
            allow=frozenset(profile.permissions_allow),
            reject=frozenset(profile.permissions_reject),
        )
        for name, profile in settings.agents.items()
    }


def tracing(
    settings: Settings, tracer: Tracer | None
) -> contextlib.AbstractAsyncContextManager[Tracer]:
    """The tracer given (tests), the one `[telemetry]` configures, or the no-op. The adapter,
    and with it the OpenTelemetry SDK and exporter, is imported here, when configured, and
    nowhere else. (FastAPI imports the OpenTelemetry API itself; the SDK is Clarion's cost.)"""
    if tracer is not None or settings.telemetry is None:
        return contextlib.nullcontext(tracer or NO_TRACER)
    from clarion.server.tracing import otel_tracer

    return otel_tracer(settings.telemetry)
