"""The exposition reads the database figures at most once per cache interval, however many
scrapes arrive, and never between scrapes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from clarion.metrics import MetricsExposition, PrometheusMetrics
from clarion.ports.metrics import OperationalFigures, WaitingQuestion

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class CountingFigures:
    def __init__(self) -> None:
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def operational_figures(self) -> OperationalFigures:
        self.reads += 1
        await self.gate.wait()
        return OperationalFigures(
            waiting=(
                WaitingQuestion("p1", "alpha", NOW - timedelta(seconds=90)),
                WaitingQuestion("p2", "beta", NOW - timedelta(seconds=30)),
            ),
            sessions={"RUNNING": 3},
            now=NOW,
        )


def _values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_scrapes_within_the_interval_share_one_read_and_a_later_one_reads_again() -> None:
    figures, clock = CountingFigures(), [100.0]
    asked: list[Sequence[str]] = []

    async def live_among(ids: Sequence[str]) -> set[str]:
        asked.append(list(ids))
        return {"p1"}

    exposition = MetricsExposition(
        PrometheusMetrics(), figures, live_among, ttl_s=5.0, monotonic=lambda: clock[0]
    )
    figures.gate.clear()
    racing = [asyncio.create_task(exposition.render()) for _ in range(5)]
    await asyncio.sleep(0)
    figures.gate.set()
    bodies = await asyncio.gather(*racing)
    assert figures.reads == 1 and asked == [["p1", "p2"]]
    clock[0] += 4.9
    await exposition.render()
    assert figures.reads == 1
    clock[0] += 0.2
    await exposition.render()
    assert figures.reads == 2

    values = _values(bodies[0][0].decode())
    assert values[("clarion_questions_waiting", (("state", "active_live"),))] == 1
    assert values[("clarion_questions_waiting", (("state", "active_detached"),))] == 1
    ws = "clarion_questions_waiting_by_workspace"
    assert values[(ws, (("state", "active_live"), ("workspace", "alpha")))] == 1
    assert values[(ws, (("state", "active_detached"), ("workspace", "beta")))] == 1
    assert values[("clarion_oldest_question_waiting_seconds", ())] == 90
    assert values[("clarion_sessions", (("state", "RUNNING"),))] == 3
    assert values[("clarion_sessions", (("state", "FAILED"),))] == 0


async def test_recording_never_reads_the_database() -> None:
    figures = CountingFigures()
    recorder = PrometheusMetrics()
    MetricsExposition(recorder, figures, lambda ids: asyncio.sleep(0, set()))
    for _ in range(100):
        recorder.answer("accepted")
        recorder.respond_seconds("live", 0.01)
    assert figures.reads == 0
