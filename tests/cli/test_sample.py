"""First start on an empty database offers one sample task whose agent asks a question."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import pytest

from clarion.api.services import ApiServices
from clarion.server.sample import SAMPLE_TITLE, offer_sample_task
from tests.e2e.harness import ServerProcess, wait_until

pytestmark = pytest.mark.e2e


def test_first_start_creates_one_asking_sample_task_and_never_another(
    make_server: Callable[..., ServerProcess],
) -> None:
    server = make_server(CLARION_NO_SAMPLE="")
    server.start()

    # The sample is offered once the server is ready (it starts a session, which readiness
    # admits), so the first reads may come before it.
    tasks = wait_until(lambda: server.ok("GET", "/tasks")["tasks"], what="the sample task")
    assert [t["title"] for t in tasks] == [SAMPLE_TITLE]
    sessions = wait_until(
        lambda: server.ok("GET", f"/tasks/{tasks[0]['id']}/task-sessions")["sessions"],
        what="the sample task's session",
    )
    assert [s["agent"] for s in sessions] == ["builtin"]
    pending_id = server.wait_for_bundle(sessions[0]["id"])
    server.wait_for_state(pending_id, "active_live")

    server.kill()
    server.start()
    assert [t["id"] for t in server.ok("GET", "/tasks")["tasks"]] == [tasks[0]["id"]]


def test_the_sample_is_off_with_clarion_no_sample() -> None:
    # The flag is read before the services are touched, so none are needed.
    services = cast(ApiServices, object())
    assert asyncio.run(offer_sample_task(services, {"CLARION_NO_SAMPLE": "1"})) is None
