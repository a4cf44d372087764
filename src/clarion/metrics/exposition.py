"""`GET /metrics`: the recorder's counters plus the gauges drawn from the database.

The gauges come from one store read (`FiguresStore.operational_figures`) and one question to
the live waiters (which of the waiting bundles a live agent call holds), taken on a scrape and
kept for `ttl_s`: scrapes from several Prometheus servers, or a scrape storm, cost one read per
interval, and nothing here runs unless someone scrapes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from clarion.domain.models import SessionState
from clarion.metrics.recorder import PrometheusMetrics
from clarion.ports.metrics import FiguresStore, OperationalFigures

LiveAmong = Callable[[Sequence[str]], Awaitable[set[str]]]
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Snapshot:
    def __init__(self, figures: OperationalFigures, live: set[str]) -> None:
        self.figures = figures
        self.live = live


class _Gauges(Collector):
    """Reads the last snapshot; never the database (collect() is synchronous)."""

    def __init__(self) -> None:
        self.snapshot: _Snapshot | None = None

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        if snap is None:
            return
        figures = snap.figures
        by_state = {"active_live": 0, "active_detached": 0}
        by_workspace: dict[tuple[str, str], int] = {}
        for q in figures.waiting:
            state = "active_live" if q.pending_id in snap.live else "active_detached"
            by_state[state] += 1
            by_workspace[(q.workspace, state)] = by_workspace.get((q.workspace, state), 0) + 1
        waiting = GaugeMetricFamily(
            "clarion_questions_waiting",
            "Questions waiting for an answer, by state",
            labels=["state"],
        )
        for state, n in by_state.items():
            waiting.add_metric([state], n)
        yield waiting
        per_ws = GaugeMetricFamily(
            "clarion_questions_waiting_by_workspace",
            "Questions waiting for an answer, by workspace and state",
            labels=["workspace", "state"],
        )
        for (workspace, state), n in sorted(by_workspace.items()):
            per_ws.add_metric([workspace, state], n)
        yield per_ws
        oldest = min((q.asked_at for q in figures.waiting), default=None)
        age = 0.0
        if oldest is not None and figures.now is not None:
            age = max(0.0, (figures.now - oldest).total_seconds())
        yield GaugeMetricFamily(
            "clarion_oldest_question_waiting_seconds",
            "How long the oldest waiting question has waited (0 when none waits)",
            value=age,
        )
        sessions = GaugeMetricFamily("clarion_sessions", "Sessions by state", labels=["state"])
        for state in SessionState:
            sessions.add_metric([state.value], figures.sessions.get(state.value, 0))
        yield sessions
        yield GaugeMetricFamily(
            "clarion_permission_requests_pending",
            "Permission requests waiting for a decision",
            value=figures.permissions_pending,
        )
        deliveries = GaugeMetricFamily(
            "clarion_webhook_deliveries",
            "Webhook deliveries still to send (pending) or given up (failed)",
            labels=["state"],
        )
        for state in ("pending", "failed"):
            deliveries.add_metric([state], figures.deliveries.get(state, 0))
        yield deliveries
        yield GaugeMetricFamily(
            "clarion_replicas", "Cluster: live replicas (0 on a single server)", figures.replicas
        )


class MetricsExposition:
    def __init__(
        self,
        recorder: PrometheusMetrics,
        store: FiguresStore,
        live_among: LiveAmong,
        *,
        ttl_s: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._recorder = recorder
        self._store = store
        self._live_among = live_among
        self._ttl_s = ttl_s
        self._monotonic = monotonic
        self._gauges = _Gauges()
        self._taken_at: float | None = None
        self._refreshing = asyncio.Lock()
        recorder.registry.register(self._gauges)

    async def render(self) -> tuple[bytes, str]:
        """The text exposition and its content type."""
        await self._refresh()
        return generate_latest(self._recorder.registry), CONTENT_TYPE

    async def _refresh(self) -> None:
        async with self._refreshing:  # concurrent scrapes share one read
            now = self._monotonic()
            if self._taken_at is not None and now - self._taken_at < self._ttl_s:
                return
            figures = await self._store.operational_figures()
            ids = [q.pending_id for q in figures.waiting]
            live = await self._live_among(ids) if ids else set()
            self._gauges.snapshot = _Snapshot(figures, live)
            self._taken_at = self._monotonic()
