"""`GET /metrics` after a scripted story on a real server, parsed with prometheus_client's own
parser: every figure matches what happened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.auth.conftest import bearer, create_token
from tests.e2e.harness import ServerProcess, answer, wait_until
from tests.ops.scrape import Samples, scrape, value
from tests.ports import free_port

pytestmark = pytest.mark.e2e


def _config(tmp_path: Path, extra: str = "") -> str:
    # A webhook nobody listens on: every attempt fails, the last one gives up.
    path = tmp_path / "clarion.toml"
    path.write_text(
        f'[[webhooks]]\nurl = "http://127.0.0.1:{free_port()}/hook"\n'
        f'secret = "0123456789abcdef0123"\nevents = ["clarification.requested"]\n{extra}'
    )
    return str(path)


def test_metrics_count_answers_agents_and_webhooks_and_gauge_what_waits(tmp_path: Path) -> None:
    server = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'c.db'}",
        workdir=tmp_path,
        env={
            "CLARION_METRICS_CACHE_S": "0",
            "CLARION_WEBHOOK_BACKOFF_S": "0.01",
            "CLARION_WEBHOOK_MAX_DELAY_S": "0.01",
            "CLARION_WEBHOOK_ATTEMPTS": "10",
        },
    )
    server.args += ["--config", _config(tmp_path)]
    server.start()
    try:
        _story(server)
    finally:
        server.stop()


def _story(server: ServerProcess) -> None:
    empty = scrape(server)
    for outcome in ("accepted", "conflict", "invalid", "retryable_error", "error"):
        assert value(empty, "clarion_answers_total", outcome=outcome) == 0
    assert value(empty, "clarion_questions_waiting", state="active_live") == 0
    assert value(empty, "clarion_oldest_question_waiting_seconds") == 0
    assert value(empty, "clarion_agent_starts_total") == 0
    # The full collection that ends start-up (the heap is then frozen) is counted.
    assert value(empty, "clarion_gc_collections_total", generation="2") >= 1
    assert value(empty, "clarion_gc_cpu_seconds_total", generation="2") > 0

    # A live question: the agent waits in its tool call.
    live_session, live_pending = server.live_question()
    # A detached one: its agent gave up waiting and ended the turn.
    detached_session, detached_pending = server.detached_question()
    waiting = scrape(server)
    assert value(waiting, "clarion_questions_waiting", state="active_live") == 1
    assert value(waiting, "clarion_questions_waiting", state="active_detached") == 1
    by_ws = "clarion_questions_waiting_by_workspace"
    assert value(waiting, by_ws, workspace="default", state="active_live") == 1
    assert value(waiting, "clarion_oldest_question_waiting_seconds") > 0
    assert value(waiting, "clarion_sessions", state="WAITING_FOR_INPUT") == 2
    assert value(waiting, "clarion_agent_starts_total") == 2

    assert server.respond(live_pending, answer("db", "sqlite")).status_code == 200
    assert server.respond(live_pending, answer("db", "sqlite")).status_code == 409
    assert server.respond(detached_pending, {"answers": "nope"}).status_code == 400
    assert server.respond("no-such-question", answer()).status_code == 404
    assert server.respond(detached_pending, answer("db", "postgres")).status_code == 200
    server.wait_for_agent_text(detached_session, "You previously asked the user:")

    # An agent that exits on its own is a failure a person sees.
    failing = server.start_session(server.create_task(), "/scenario exit code=3")
    wait_until(
        lambda: server.ok("GET", f"/task-sessions/{failing}")["session"]["state"] == "FAILED",
        what="the exited agent's session failing",
    )

    after = scrape(server)
    assert value(after, "clarion_answers_total", outcome="accepted") == 2
    assert value(after, "clarion_answers_total", outcome="conflict") == 1
    assert value(after, "clarion_answers_total", outcome="invalid") == 2
    assert value(after, "clarion_answers_total", outcome="retryable_error") == 0
    assert value(after, "clarion_answers_total", outcome="error") == 0
    assert value(after, "clarion_respond_seconds_count", path="live") == 1
    assert value(after, "clarion_respond_seconds_count", path="detached") == 1
    assert value(after, "clarion_respond_seconds_sum", path="live") > 0
    assert value(after, "clarion_resumes_total") == 1
    assert value(after, "clarion_agent_starts_total") == 3
    assert value(after, "clarion_agent_failures_total") == 1
    assert value(after, "clarion_sessions", state="FAILED") == 1
    assert value(after, "clarion_questions_waiting", state="active_live") == 0
    assert value(after, "clarion_questions_waiting", state="active_detached") == 0
    assert value(after, "clarion_oldest_question_waiting_seconds") == 0
    assert value(after, "clarion_ambiguous_deliveries_total") == 0
    assert value(after, "clarion_carried_requests_total") == 0
    assert live_session != detached_session

    # Two questions asked: two webhook deliveries, each tried ten times, then given up.
    def given_up() -> Samples | None:
        samples = scrape(server)
        done = value(samples, "clarion_webhook_deliveries", state="pending") == 0
        return samples if done else None

    hooks = wait_until(given_up, timeout=60, what="both webhook deliveries given up")
    assert value(hooks, "clarion_webhook_deliveries", state="failed") == 2
    assert value(hooks, "clarion_webhook_attempts_total", result="failed") == 2
    assert value(hooks, "clarion_webhook_attempts_total", result="retry") == 18
    assert value(hooks, "clarion_webhook_attempts_total", result="delivered") == 0


def test_metrics_need_a_token_with_auth_an_api_token_or_the_metrics_token(
    tmp_path: Path,
) -> None:
    metrics_token = "metrics-" + "x" * 24
    url = f"sqlite:///{tmp_path / 'c.db'}"
    server = ServerProcess(database_url=url, workdir=tmp_path)
    config = tmp_path / "clarion.toml"
    config.write_text(f'metrics_token = "{metrics_token}"\n')
    server.args += ["--auth", "--config", str(config)]
    server.start(wait_ready=False)
    wait_until(lambda: _status(server, {}) == 401, what="the server refusing an anonymous scrape")
    api_token = create_token(url, "alice", "alpha", tmp_path / "home")
    try:
        assert _status(server, bearer("wrong-" + "y" * 30)) == 401
        assert _status(server, bearer(metrics_token)) == 200
        assert _status(server, bearer(api_token)) == 200
        # The metrics token opens /metrics only.
        tasks = httpx.get(f"{server.url}/api/v1/tasks", headers=bearer(metrics_token), timeout=10)
        assert tasks.status_code == 401
    finally:
        server.stop()


def _status(server: ServerProcess, headers: dict[str, Any]) -> int:
    try:
        return httpx.get(f"{server.url}/metrics", headers=headers, timeout=10).status_code
    except httpx.HTTPError:
        return 0
