"""`clarion review`: comments parsed from PATH[:LINE]:TEXT, sent as one review turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.cli.review import parse_comment
from clarion.client.errors import CliError
from tests.cli.cli_runner import run_cli
from tests.e2e.harness import ServerProcess, running_server, wait_until
from tests.workspaces.gitrepo import make_repository


@pytest.mark.parametrize(
    ("raw", "comment"),
    [
        ("src/app.py:12:rename this", {"path": "src/app.py", "line": 12, "body": "rename this"}),
        ("README.md:say more: why", {"path": "README.md", "body": "say more: why"}),
        ("a.py:3: time 10:30", {"path": "a.py", "line": 3, "body": "time 10:30"}),
    ],
)
def test_a_comment_is_path_optional_line_and_text(raw: str, comment: dict[str, object]) -> None:
    assert parse_comment(raw) == comment


@pytest.mark.parametrize("raw", ["no-colon", "a.py:", "a.py:3:", ":text"])
def test_a_comment_without_a_path_or_a_text_is_a_usage_error(raw: str) -> None:
    with pytest.raises(CliError) as caught:
        parse_comment(raw)
    assert caught.value.exit_code == 2


@pytest.fixture(scope="module")
def repository_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("review-cli")
    repository = make_repository(root, {"README.md": "hello\n"})
    config = root / "clarion.toml"
    config.write_text(f'[repositories.app]\npath = "{repository}"\n')
    with running_server(root, args=["--config", str(config)]) as server:
        yield server


def test_review_sends_the_comments_and_the_summary_as_one_turn(
    repository_server: ServerProcess,
) -> None:
    server = repository_server
    task_id = server.ok("POST", "/tasks", 201, json={"title": "t", "repository": "app"})["task"][
        "id"
    ]
    session_id = server.start_session(task_id, "/scenario write path=app.py text=x = 1")
    server.wait_for_agent_text(session_id, "wrote app.py")
    wait_until(
        lambda: server.ok("GET", f"/task-sessions/{session_id}")["session"]["state"] == "IDLE",
        what="the session idle",
    )
    result = run_cli(
        server, "review", task_id, "--comment", "app.py:1:name it", "--summary", "Otherwise fine."
    )
    assert result.exit_code == 0, result.stderr
    assert "Review sent" in result.stdout
    reply = server.wait_for_agent_text(session_id, "Review of your changes")
    assert reply == "Received: Review of your changes:\napp.py:1: name it\nOtherwise fine."


def test_review_of_a_task_without_a_worktree_exits_3(repository_server: ServerProcess) -> None:
    task_id = repository_server.create_task()
    result = run_cli(repository_server, "review", task_id, "--summary", "good")
    assert result.exit_code == 3


def test_review_with_nothing_to_say_exits_2_without_asking_the_server(tmp_path: Path) -> None:
    server = ServerProcess(database_url="sqlite:///unused", workdir=tmp_path)  # never started
    assert run_cli(server, "review", "t1").exit_code == 2
