"""Projections through a real `clarion serve` process: a stale summary left in the database is
repaired on /boot, /tasks and /workflow/snapshot; the workflow guard and session revisions over
HTTP. Fault-point cases run against the in-process server (test_http_inprocess.py), which is
much cheaper to start."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from clarion.domain.models import StatusSummary
from clarion.runtime.clock import SystemClock
from tests.e2e.conftest import make_server  # noqa: F401  (the fixture)
from tests.e2e.harness import ServerProcess, answer
from tests.whole_store import open_whole_store

pytestmark = pytest.mark.e2e

UNRELATED = {"foreground_activity": "idle", "zz_unknown": {"nested": [1, "two"]}, "git": None}


def _write_summary(url: str, task_id: str, data: dict[str, Any]) -> StatusSummary:
    """Leave a stale summary in the server's database, as an older process might have."""

    async def write() -> StatusSummary:
        async with open_whole_store(url, SystemClock()) as store:
            current = await store.find_summary(task_id)
            written = await store.cas_summary(
                task_id,
                expected_revision=None if current is None else current.revision,
                data=data,
            )
            assert written is not None
            return written

    return asyncio.run(write())


def _task_in(server: ServerProcess, path: str, task_id: str) -> dict[str, Any]:
    body = server.ok("GET", path)
    tasks = body["tasks"] if "tasks" in body else [t for s in body["steps"] for t in s["tasks"]]
    return next(t for t in tasks if t["id"] == task_id)


def test_a_stale_summary_is_repaired_on_boot_tasks_and_snapshot_keeping_unrelated_fields(
    make_server: Callable[..., ServerProcess],  # noqa: F811
) -> None:
    server = make_server()
    server.start()
    task_id = server.create_task()
    session_id = server.start_session(task_id, "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    assert server.ok("GET", "/boot")["epoch"] == "1"

    for path in ("/boot", "/tasks", "/workflow/snapshot"):
        stale = _write_summary(server.database_url, task_id, dict(UNRELATED))
        repaired = _task_in(server, path, task_id)["status_summary"]
        assert repaired["pending_action"] == "clarification", path
        assert repaired["revision"] == stale.revision + 1, path
        assert {k: repaired[k] for k in UNRELATED} == UNRELATED, path
        again = _task_in(server, path, task_id)["status_summary"]
        assert again["revision"] == repaired["revision"], f"{path}: no semantic change"

    # The workflow guard holds while the question is active, and lets go once it is answered.
    refused = server.request("POST", f"/tasks/{task_id}/move", json={"step": "review"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "pending_input"
    (before,) = server.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"]
    assert before["pending_action"] == "clarification"

    assert server.respond(pending_id, answer()).status_code == 200
    (after,) = server.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"]
    assert after["pending_action"] is None
    assert after["pending_action_revision"]["epoch"] == before["pending_action_revision"]["epoch"]
    assert (
        after["pending_action_revision"]["sequence"] > before["pending_action_revision"]["sequence"]
    )
    moved = server.ok("POST", f"/tasks/{task_id}/move", json={"step": "review"})
    assert moved["task"]["workflow_step"] == "review"
    assert "pending_action" not in moved["task"]["status_summary"]
    assert {k: moved["task"]["status_summary"][k] for k in UNRELATED} == UNRELATED
