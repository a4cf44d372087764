"""`clarion demo` end to end, as a user runs it."""

from __future__ import annotations

import subprocess

import pytest

from tests.cli.cli_runner import child_env, cli

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(180)
def test_demo_tells_the_whole_story_and_exits_0() -> None:
    done = subprocess.run(
        cli("demo"), capture_output=True, text=True, env=child_env(), timeout=170, check=False
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "[1/3] A live question" in out
    assert 'the agent replied: You answered: {"db": {"selected_options": ["postgres"]' in out
    assert "[2/3] A question that outlives the server" in out
    assert "server killed" in out and "server restarted" in out
    assert "resumed: true" in out
    assert "You previously asked the user:" in out
    assert "[3/3] A stale answer" in out
    assert "HTTP 409" in out and "the answer that won: db: sqlite" in out
    assert "Demo finished" in out
    assert "Traceback" not in out + done.stderr
