"""A lifecycle (tests/lifecycle/harness.py) whose built-in profile waits under a policy, on a
clock the test moves: wall time is real time plus what the test advanced, so records keep
their real order while deadlines fall due exactly when the test says."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from clarion.config import Settings, builtin_profile
from clarion.config.webhooks import Webhook
from clarion.domain.waiting import OnExpiry, WaitingPolicy, parse_duration
from clarion.runtime.clock import ManualClock
from tests.lifecycle.harness import Lifecycle, fast_settings, lifecycle_on

ASK_DEFAULT = {
    "questions": [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [
                {"label": "PostgreSQL", "option_id": "postgres"},
                {"label": "MongoDB", "option_id": "mongodb"},
                {"label": "SQLite", "option_id": "sqlite", "default": True},
            ],
        }
    ]
}


# Real seconds that may pass between an ask and a check on a loaded machine: a ShiftedClock's wall
# time moves with real time, so a check "just before" a deadline stays before it by this much.
REAL_TIME_MARGIN_S = 300.0


class ShiftedClock(ManualClock):
    """Timers move only with `advance`; wall time is real time plus the advances."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)
        super().advance(seconds)


def policy(
    *,
    remind: str | None = None,
    escalate: str | None = None,
    to: tuple[str, ...] | None = None,
    expire: str | None = None,
    on_expiry: OnExpiry | None = None,
) -> WaitingPolicy:
    return WaitingPolicy(
        remind_after=parse_duration(remind) if remind else None,
        escalate_after=parse_duration(escalate) if escalate else None,
        escalate_to=to,
        expire_after=parse_duration(expire) if expire else None,
        on_expiry=on_expiry,
    )


def waiting_settings(
    database_url: str,
    waiting: WaitingPolicy | None,
    *,
    workspaces: dict[str, WaitingPolicy] | None = None,
    webhooks: tuple[Webhook, ...] = (),
    **timeouts: float,
) -> Settings:
    # The asker's own wait limit stays out of the way: hours pass on the clock.
    base = fast_settings(database_url, **{"clarification_wait": 1e9, **timeouts})
    return replace(
        base,
        agents={"builtin": replace(builtin_profile(), waiting=waiting)},
        workspace_waiting=workspaces or {},
        webhooks=webhooks,
    )


@contextlib.asynccontextmanager
async def waiting_lifecycle(
    database_url: str, waiting: WaitingPolicy | None, clock: ShiftedClock, **options: Any
) -> AsyncIterator[Lifecycle]:
    settings = waiting_settings(database_url, waiting, **options)
    async with lifecycle_on(settings, clock=clock) as life:
        yield life


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Until `check()` holds (it reads durable state), or fail after `within` seconds."""

    async def poll() -> None:
        while not await check():  # noqa: ASYNC110 (durable state has no event to await)
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), within)
