"""A 500 from the server reads as a message that says whether the answer may be sent again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clarion.client.errors import api_error
from tests.cli.cli_runner import run_cli
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.e2e


def test_refused_resume_is_a_retryable_server_error(
    make_server: Callable[..., ServerProcess],
) -> None:
    server = make_server()
    server.start(failpoints="resume.dispatch=error")
    session_id = server.start_session(server.create_task(), "/scenario ask-timeout t=1")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_detached")

    failed = run_cli(server, "answer", pending_id, "-o", "db=postgres")
    assert failed.exit_code == 1, failed
    assert "HTTP 500" in failed.stderr
    assert "a retry is safe: the same request may be sent again" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert server.bundle(pending_id)["state"] == "active_detached"


def test_unfinalized_dispatch_says_not_to_retry() -> None:
    body = (
        '{"error": {"code": "dispatch_not_finalized", "message": "accepted, publication '
        'unfinished", "retryable": false}}'
    )
    error = api_error(500, body, "sending the answer")
    assert error.exit_code == 1
    assert "dispatch_not_finalized" in error.message
    assert "do not retry: the request was accepted and must not be sent again" in error.details


def test_a_reply_outside_the_contract_shape_is_quoted() -> None:
    error = api_error(502, "<html>bad gateway</html>", "listing tasks")
    assert error.message == "listing tasks: HTTP 502: <html>bad gateway</html>"
    assert error.exit_code == 1
