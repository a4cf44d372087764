"""What an adopting replica does for Slack (clarion/server/cluster.py, `Joined.take_over`): once
the adopted sessions are recovered, their queued clicks are taken up (the dead replica's claims
released, the answerer woken) and a line says how many; not when their recovery failed (the
replica stops, the next adopter takes them up), and a failed release does not fail the
adoption (those claims lapse at their lease)."""

from __future__ import annotations

import logging
from collections.abc import Collection
from types import SimpleNamespace
from typing import Any, cast

import pytest

from clarion.api.session_gate import SessionGate
from clarion.domain.scope import SessionScope
from clarion.orchestrator.recovery import RecoveryReport
from clarion.server.cluster import Joined
from clarion.server.replica import Replica
from clarion.server.wiring import App
from clarion.store.db.membership import Membership


class _Member:
    replica_id = "me"
    timeout_s = 0.4


class _Answerer:
    """The Slack answerer's `take_up`, noted in `said`; it fails when told to."""

    def __init__(self, said: list[str], fails: bool = False) -> None:
        self.said = said
        self.fails = fails

    async def take_up(self, session_ids: Collection[str]) -> int:
        self.said.append(f"slack took up {sorted(session_ids)}")
        if self.fails:
            raise RuntimeError("database away")
        return 1


def _joined(said: list[str], answerer: _Answerer | None, recovery_fails: bool = False) -> Joined:
    async def adopt_replica(me: str, dead: str) -> list[str] | None:
        return ["s1", "s2"]

    async def run(scope: SessionScope) -> RecoveryReport:
        if recovery_fails:
            raise RuntimeError("recovery failed")
        said.append("recovered")
        return RecoveryReport(2, 0, 0, 0, 0, 0, 0, 0)

    app: Any = SimpleNamespace(
        ownership=SimpleNamespace(adopt_replica=adopt_replica),
        metrics=SimpleNamespace(adopted=lambda n: None),
        recovery=SimpleNamespace(run=run),
        deadlines=SimpleNamespace(wake=lambda: None),
        slack_answerer=answerer,
    )
    replica = Replica(cast(Membership, _Member()), lambda: 0)
    replica.stop_fenced = lambda reason: said.append("stopped")  # type: ignore[method-assign]
    return Joined(cast(App, app), replica, SessionGate())


async def test_the_adopted_sessions_slack_clicks_are_taken_up_after_their_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said: list[str] = []
    with caplog.at_level(logging.INFO, logger="clarion.server.cluster"):
        await _joined(said, _Answerer(said)).take_over("dead")
    assert said == ["recovered", "slack took up ['s1', 's2']"]
    [line] = [r for r in caplog.records if r.getMessage().startswith("slack clicks")]
    assert (line.replica, line.dead_replica, line.sessions, line.released) == (  # type: ignore[attr-defined]
        "me",
        "dead",
        ["s1", "s2"],
        1,
    )


async def test_sessions_whose_recovery_failed_are_left_to_the_next_adopter() -> None:
    said: list[str] = []
    await _joined(said, _Answerer(said), recovery_fails=True).take_over("dead")
    assert said == ["stopped"]


async def test_a_failed_release_is_logged_and_the_adoption_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said: list[str] = []
    await _joined(said, _Answerer(said, fails=True)).take_over("dead")
    assert said == ["recovered", "slack took up ['s1', 's2']"]
    assert any("lapse at their lease" in r.getMessage() for r in caplog.records)


async def test_without_slack_an_adoption_takes_up_nothing() -> None:
    said: list[str] = []
    await _joined(said, None).take_over("dead")
    assert said == ["recovered"]
