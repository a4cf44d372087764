"""Task worktrees through a real `clarion serve`, the built-in agent and a real git repository:
one worktree per task, crash-safe creation, reviews sent once, archiving that keeps the branch."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.harness import ServerProcess, wait_until
from tests.workspaces.gitrepo import git, make_repository

REVIEW_MARK = "Received: Review of your changes:"


def branches(repository: Path) -> list[str]:
    out = git(repository, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
    return sorted(out.split())


def worktree_dirs(repository: Path) -> list[str]:
    out = git(repository, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def configure(server: ServerProcess, text: str) -> Path:
    config = server.workdir / "clarion.toml"
    config.write_text(text)
    server.args = ["--config", str(config)]
    return config


def repository_server(
    make_server: Callable[..., ServerProcess], tmp_path: Path, db: str = "sqlite"
) -> tuple[ServerProcess, Path]:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    server = make_server(db)
    configure(server, f'[repositories.app]\npath = "{repository}"\n')
    return server, repository


def task_with_repository(server: ServerProcess) -> str:
    body = server.ok("POST", "/tasks", 201, json={"title": "Change it", "repository": "app"})
    assert body["task"]["repository"] == "app"
    assert body["task"]["worktree"] is None
    return str(body["task"]["id"])


def worktree_of(server: ServerProcess, task_id: str) -> dict[str, Any]:
    worktree = server.ok("GET", f"/tasks/{task_id}")["task"]["worktree"]
    assert worktree is not None
    return dict(worktree)


def count_in_agent_texts(server: ServerProcess, session_id: str, needle: str) -> int:
    return sum(needle in text for text in server.agent_texts(session_id))


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_tasks_on_one_repository_get_two_worktrees_and_a_write_in_one_shows_nowhere_else(
    make_server: Callable[..., ServerProcess], tmp_path: Path, db: str
) -> None:
    server, repository = repository_server(make_server, tmp_path, db)
    server.start()
    first, second = task_with_repository(server), task_with_repository(server)
    one = server.start_session(first, "/scenario write path=notes/plan.txt text=only here")
    server.wait_for_agent_text(one, "wrote notes/plan.txt")
    two = server.start_session(second, "/scenario read path=notes/plan.txt")
    server.wait_for_agent_text(two, "read notes/plan.txt failed")

    a, b = worktree_of(server, first), worktree_of(server, second)
    assert a["path"] != b["path"]
    assert (a["branch"], b["branch"]) == (f"clarion/{first}", f"clarion/{second}")
    assert a["state"] == b["state"] == "ready"
    assert a["base"] == "main"
    assert (Path(a["path"]) / "notes" / "plan.txt").read_text() == "only here"
    assert not (repository / "notes").exists()
    assert git(repository, "status", "--porcelain") == ""
    assert branches(repository) == sorted(["main", f"clarion/{first}", f"clarion/{second}"])
    # The agent reads its own worktree too (a path relative to its working directory).
    server.ok(
        "POST",
        f"/task-sessions/{one}/prompt",
        202,
        json={"text": "/scenario read path=notes/plan.txt"},
    )
    server.wait_for_agent_text(one, "read notes/plan.txt: only here")
    # The task read says it on every route: the list and the board too.
    listed = {t["id"]: t for t in server.ok("GET", "/tasks")["tasks"]}
    assert listed[first]["worktree"] == a
    board = server.ok("GET", "/workflow/snapshot")["steps"]
    assert any(t["id"] == first and t["worktree"] == a for s in board for t in s["tasks"])


def test_the_changes_of_a_task_show_its_agents_untracked_file(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id = task_with_repository(server)
    assert server.request("GET", f"/tasks/{task_id}/changes").status_code == 404
    session_id = server.start_session(task_id, "/scenario write path=src/new.py text=print(1)")
    server.wait_for_agent_text(session_id, "wrote src/new.py")
    changes = server.ok("GET", f"/tasks/{task_id}/changes")
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("src/new.py", "added")]
    assert changes["branch"] == f"clarion/{task_id}"


def test_a_task_without_a_repository_has_no_worktree_and_no_changes(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id = server.create_task()
    task = server.ok("GET", f"/tasks/{task_id}")["task"]
    assert (task["repository"], task["worktree"]) == (None, None)
    missing = server.request("GET", f"/tasks/{task_id}/changes")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    review = server.request("POST", f"/tasks/{task_id}/review", json={"summary": "looks good"})
    assert review.status_code == 404


def test_an_unknown_repository_is_refused_naming_the_field_and_creates_nothing(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    response = server.request("POST", "/tasks", json={"title": "x", "repository": "nope"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == "repository"
    assert server.ok("GET", "/tasks")["total"] == 0


def test_a_workspace_default_repository_applies_to_its_new_tasks(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    server = make_server()
    configure(
        server,
        f'[repositories.app]\npath = "{repository}"\n\n[workspaces.default]\nrepository = "app"\n',
    )
    server.start(extra_env={"CLARION_NO_SAMPLE": ""})
    # The first-start sample task is Clarion's own: it gets no repository, so no branch.
    sample = wait_until(lambda: server.ok("GET", "/tasks")["tasks"], what="the sample task")
    assert [t["repository"] for t in sample] == [None]
    assert server.ok("GET", f"/tasks/{server.create_task()}")["task"]["repository"] == "app"
    assert branches(repository) == ["main"]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ('[repositories.app]\npath = "{tmp}"\n', "repositories.app.path"),
        ('[repositories.app]\npath = "{repo}"\nbase = "nope"\n', "repositories.app.base"),
        ('[repositories.app]\npath = "relative/path"\n', "repositories.app.path"),
    ],
    ids=["not-a-repository", "missing-base", "relative-path"],
)
def test_a_bad_repository_stops_serve_with_status_2_naming_the_file_and_key(
    make_server: Callable[..., ServerProcess], tmp_path: Path, config: str, key: str
) -> None:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    plain = tmp_path / "plain"
    plain.mkdir()
    server = make_server()
    path = configure(server, config.format(tmp=plain, repo=repository))
    server.start(wait_ready=False)
    assert server.wait_exit() == 2
    lines = [line for line in server.logs().splitlines() if line.strip()]
    assert str(path) in lines[-1] and key in lines[-1]


def test_serve_without_git_refuses_a_configured_repository(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    python_dir = Path(subprocess.check_output(["which", "python3"], text=True).strip()).parent
    server.start(wait_ready=False, extra_env={"PATH": str(python_dir / "no-such-dir")})
    assert server.wait_exit() == 2
    assert "git is not installed" in server.logs()


@pytest.mark.parametrize("point", ["worktree.before_add", "worktree.after_add"])
@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_kill_at_each_worktree_fault_point_leaves_one_branch_and_a_complete_worktree(
    make_server: Callable[..., ServerProcess], tmp_path: Path, point: str, db: str
) -> None:
    server, repository = repository_server(make_server, tmp_path, db)
    server.start(failpoints=f"{point}=crash")
    task_id = task_with_repository(server)
    with pytest.raises(httpx.HTTPError):
        server.request(
            "POST",
            f"/tasks/{task_id}/task-sessions",
            json={"agent": "builtin", "prompt": "/scenario write path=a.txt text=one"},
        )
    assert server.wait_exit() == 137
    server.start()  # startup repairs the row the kill left `creating`
    worktree = worktree_of(server, task_id)
    assert worktree["state"] == "ready"
    assert branches(repository) == sorted(["main", f"clarion/{task_id}"])
    assert worktree["path"] in worktree_dirs(repository)
    assert (Path(worktree["path"]) / "README.md").read_text() == "hello\n"
    session_id = server.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"][0]["id"]
    server.ok(
        "POST",
        f"/task-sessions/{session_id}/prompt",
        202,
        json={"text": "/scenario write path=b.txt text=two"},
    )
    server.wait_for_agent_text(session_id, "wrote b.txt")
    assert (Path(worktree["path"]) / "b.txt").read_text() == "two"
    assert branches(repository) == sorted(["main", f"clarion/{task_id}"])


def _worked_task(server: ServerProcess) -> tuple[str, str]:
    """A task whose agent wrote a file and went idle: (task id, session id)."""
    task_id = task_with_repository(server)
    session_id = server.start_session(task_id, "/scenario write path=app.py text=x = 1")
    server.wait_for_agent_text(session_id, "wrote app.py")
    wait_until(
        lambda: server.ok("GET", f"/task-sessions/{session_id}")["session"]["state"] == "IDLE",
        what="the session idle",
    )
    return task_id, session_id


def test_a_review_is_one_turn_the_agent_gets_once(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id, session_id = _worked_task(server)
    turns_before = len(server.turns(session_id))
    body = server.ok(
        "POST",
        f"/tasks/{task_id}/review",
        json={
            "comments": [
                {"path": "app.py", "line": 1, "body": "name it"},
                {"path": "app.py", "body": "add a test"},
            ],
            "summary": "Otherwise fine.",
        },
    )
    reply = server.wait_for_agent_text(session_id, REVIEW_MARK)
    assert reply == (
        "Received: Review of your changes:\napp.py:1: name it\napp.py: add a test\nOtherwise fine."
    )
    turns = server.turns(session_id)
    assert body["turn_id"] in [t["id"] for t in turns]
    assert len(turns) == turns_before + 1


def _equals(read: Callable[[], int], expected: int) -> bool:
    return read() == expected


def _race_two_reviews(server: ServerProcess, task_id: str, tag: str) -> list[httpx.Response]:
    barrier = threading.Barrier(2)
    results: list[httpx.Response] = []

    def send(text: str) -> None:
        barrier.wait()
        results.append(server.request("POST", f"/tasks/{task_id}/review", json={"summary": text}))

    threads = [threading.Thread(target=send, args=(f"review {tag}.{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(results, key=lambda r: r.status_code)


def test_two_racing_reviews_send_one_and_refuse_the_other_as_busy(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id, session_id = _worked_task(server)

    def received() -> int:
        return count_in_agent_texts(server, session_id, REVIEW_MARK)

    def idle() -> bool:
        return bool(server.ok("GET", f"/task-sessions/{session_id}")["session"]["state"] == "IDLE")

    sent = 0
    # The built-in agent ends a review's turn at once, so on a loaded machine one request can
    # reach the server after the other's turn ended, and both are rightly sent. Each round
    # checks that every review sent reaches the agent once, and the race is run again until
    # the two overlap and one is refused as busy.
    for round_ in range(8):
        results = _race_two_reviews(server, task_id, str(round_))
        statuses = [r.status_code for r in results]
        assert statuses in ([200, 200], [200, 409]), [r.text for r in results]
        sent += statuses.count(200)
        wait_until(functools.partial(_equals, received, sent), what="each review once")
        wait_until(idle, what="the session idle again")
        if statuses == [200, 409]:
            assert results[1].json()["error"]["code"] == "session_busy"
            break
    else:
        pytest.fail("eight rounds of two racing reviews never overlapped")
    assert received() == sent


@pytest.mark.parametrize("scenario", ["/scenario ask", "/scenario ask-timeout t=1"])
def test_a_review_while_a_question_waits_is_busy_and_writes_nothing(
    make_server: Callable[..., ServerProcess], tmp_path: Path, scenario: str
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id = task_with_repository(server)
    session_id = server.start_session(task_id, scenario)
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(
        pending_id, "active_live" if scenario.endswith("ask") else "active_detached"
    )
    turns = server.turns(session_id)
    response = server.request("POST", f"/tasks/{task_id}/review", json={"summary": "hurry"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "session_busy"
    assert server.turns(session_id) == turns
    assert not any("Review of your changes" in m["content"] for m in server.messages(session_id))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "comments"),
        ({"comments": [], "summary": "  "}, "comments"),
        ({"comments": [{"path": "../outside.txt", "body": "no"}]}, "comments[0].path"),
        ({"comments": [{"path": "/etc/passwd", "body": "no"}]}, "comments[0].path"),
        ({"comments": [{"path": "a.py", "line": 0, "body": "no"}]}, "comments[0].line"),
        ({"comments": [{"path": "a.py"}]}, "comments[0].body"),
        ({"comments": "a.py"}, "comments"),
    ],
    ids=["empty", "blank-summary", "dot-dot", "absolute-outside", "line-0", "no-body", "shape"],
)
def test_a_bad_review_is_refused_naming_the_field_and_writes_nothing(
    module_repository_server: tuple[ServerProcess, str, str], body: dict[str, Any], field: str
) -> None:
    server, task_id, session_id = module_repository_server
    turns = server.turns(session_id)
    response = server.request("POST", f"/tasks/{task_id}/review", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == field
    assert server.turns(session_id) == turns


@pytest.fixture(scope="module")
def module_repository_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    from tests.e2e.harness import FAST_TIMEOUTS  # noqa: F401  (the harness's fast timeouts)

    root = tmp_path_factory.mktemp("repo-server")
    repository = make_repository(root, {"README.md": "hello\n"})
    workdir = root / "server"
    workdir.mkdir()
    server = ServerProcess(database_url=f"sqlite:///{root / 'clarion.db'}", workdir=workdir)
    configure(server, f'[repositories.app]\npath = "{repository}"\n')
    server.start()
    try:
        task_id, session_id = _worked_task(server)
        yield server, task_id, session_id
    finally:
        server.stop()


def test_a_kill_between_the_attempt_marker_and_the_agents_accept_never_sends_the_review_twice(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id, session_id = _worked_task(server)
    server.stop()
    server.start(failpoints="resume.after_attempt=crash")
    with pytest.raises(httpx.HTTPError):
        server.request("POST", f"/tasks/{task_id}/review", json={"summary": "first"})
    assert server.wait_exit() == 137
    server.start()
    kept = [t for t in server.turns(session_id) if t["metadata"].get("review")]
    assert len(kept) == 1 and kept[0]["metadata"].get("interrupted") is True
    # Nothing sends it again by itself; a new review is the person's decision.
    server.ok("POST", f"/tasks/{task_id}/review", json={"summary": "second"})
    server.wait_for_agent_text(session_id, f"{REVIEW_MARK}\nsecond")
    assert count_in_agent_texts(server, session_id, REVIEW_MARK) == 1


def test_a_review_the_agent_refused_is_rolled_back_and_may_be_sent_again(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id, session_id = _worked_task(server)
    turns = server.turns(session_id)
    server.stop()
    server.start(failpoints="resume.dispatch=error")
    refused = server.request("POST", f"/tasks/{task_id}/review", json={"summary": "again"})
    assert refused.status_code == 500
    assert refused.json()["error"] == {
        "code": "review_not_accepted",
        "message": refused.json()["error"]["message"],
        "retryable": True,
    }
    assert [
        t["id"] for t in server.turns(session_id) if not t["metadata"].get("lifecycle_only")
    ] == [t["id"] for t in turns if not t["metadata"].get("lifecycle_only")]
    server.stop()
    server.start()
    server.ok("POST", f"/tasks/{task_id}/review", json={"summary": "again"})
    server.wait_for_agent_text(session_id, f"{REVIEW_MARK}\nagain")


def test_archive_removes_the_worktree_keeps_the_branch_and_leaves_the_active_steps(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, repository = repository_server(make_server, tmp_path)
    server.start()
    task_id, _ = _worked_task(server)
    path = worktree_of(server, task_id)["path"]
    task = server.ok("POST", f"/tasks/{task_id}/archive")["task"]
    assert task["worktree"]["state"] == "removed"
    assert task["workflow_step"] == "done"
    assert not Path(path).exists()
    assert path not in worktree_dirs(repository)
    assert f"clarion/{task_id}" in branches(repository)
    assert server.request("GET", f"/tasks/{task_id}/changes").status_code == 404


def test_archive_is_refused_while_a_turn_runs(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id = task_with_repository(server)
    session_id = server.start_session(task_id, "/scenario stream n=400 ms=50")
    server.wait_for_agent_text(session_id, "")
    response = server.request("POST", f"/tasks/{task_id}/archive")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "session_busy"
    assert worktree_of(server, task_id)["state"] == "ready"
    server.ok("POST", f"/task-sessions/{session_id}/cancel")


def test_archive_is_refused_while_a_question_waits(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, _ = repository_server(make_server, tmp_path)
    server.start()
    task_id = task_with_repository(server)
    session_id = server.start_session(task_id, "/scenario ask-timeout t=1")
    server.wait_for_state(server.wait_for_bundle(session_id), "active_detached")
    response = server.request("POST", f"/tasks/{task_id}/archive")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "pending_input"
    assert worktree_of(server, task_id)["state"] == "ready"
    assert Path(worktree_of(server, task_id)["path"]).exists()


def test_the_worktree_wins_over_the_profiles_cwd(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    elsewhere = tmp_path / "profile-cwd"
    elsewhere.mkdir()
    server = make_server()
    configure(
        server,
        f'[agents.builtin]\ncwd = "{elsewhere}"\n[repositories.app]\npath = "{repository}"\n',
    )
    server.start()
    task_id = task_with_repository(server)
    session_id = server.start_session(task_id, "/scenario write path=here.txt text=x")
    server.wait_for_agent_text(session_id, "wrote here.txt")
    assert (Path(worktree_of(server, task_id)["path"]) / "here.txt").exists()
    assert not (elsewhere / "here.txt").exists()
    # A task without a repository still runs in the profile's cwd.
    plain = server.start_session(server.create_task(), "/scenario write path=plain.txt text=y")
    server.wait_for_agent_text(plain, "wrote plain.txt")
    assert (elsewhere / "plain.txt").exists()


def test_a_worktree_that_cannot_be_made_fails_the_session_with_the_reason(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server, repository = repository_server(make_server, tmp_path)
    server.start()
    repository.rename(repository.with_name("moved-away"))
    task_id = task_with_repository(server)
    response = server.request(
        "POST", f"/tasks/{task_id}/task-sessions", json={"agent": "builtin", "prompt": "hi"}
    )
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "agent_unavailable"
    session_id = error["session_id"]
    session = server.ok("GET", f"/task-sessions/{session_id}")["session"]
    assert session["state"] == "FAILED"
    assert "worktree could not be made" in session["error"]
    errors = [m for m in server.messages(session_id) if m["type"] == "error"]
    assert len(errors) == 1 and errors[0]["metadata"]["phase"] == "start"
    assert worktree_of(server, task_id)["state"] == "creating"


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_retention_removes_a_pruned_tasks_worktree_even_across_a_kill_and_keeps_its_branch(
    make_server: Callable[..., ServerProcess], tmp_path: Path, db: str
) -> None:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    server = make_server(db)
    configure(
        server,
        f'[repositories.app]\npath = "{repository}"\n'
        '[retention]\nolder_than = "1s"\nevery = "1s"\n',
    )
    # The pass that prunes the task's session marks its worktree removed, then is killed
    # before git removes the directory.
    server.start(failpoints="worktree.before_remove=crash")
    task_id, session_id = _worked_task(server)
    path = worktree_of(server, task_id)["path"]
    server.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})
    assert server.wait_exit() == 137
    assert Path(path).exists()
    server.start()  # startup finishes the removal
    assert worktree_of(server, task_id)["state"] == "removed"
    assert not Path(path).exists()
    assert path not in worktree_dirs(repository)
    assert f"clarion/{task_id}" in branches(repository)


def test_a_review_to_an_agent_restarted_without_its_conversation_begins_with_the_review(
    make_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    # An agent without session/load gets a recap after a restart. The review's prompt still
    # begins `Review of your changes:`; the recap follows it, in the same one turn.
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    server = make_server()
    configure(
        server,
        f'[repositories.app]\npath = "{repository}"\n'
        "[agents.forgetful]\n"
        f'command = ["{sys.executable}", "-m", "clarion.agents.builtin"]\n'
        'env = { CLARION_BUILTIN_LOAD_SESSION = "0" }\n',
    )
    server.start()
    task_id = task_with_repository(server)
    session_id = server.start_session(
        task_id, "/scenario write path=app.py text=x = 1", agent="forgetful"
    )
    server.wait_for_agent_text(session_id, "wrote app.py")
    server.kill()
    server.start()

    review = {"comments": [{"path": "app.py", "line": 1, "body": "name it"}], "summary": "Fine."}
    turn_id = server.ok("POST", f"/tasks/{task_id}/review", json=review)["turn_id"]

    reply = server.wait_for_agent_text(session_id, REVIEW_MARK)
    head, _, recap = reply.partition("\n\n")
    assert head == f"{REVIEW_MARK}\napp.py:1: name it\nFine."
    assert recap.startswith("[Clarion] Your process was restarted")
    assert "User: /scenario write path=app.py text=x = 1" in recap
    assert recap.rstrip().endswith("[End of recap]")
    assert count_in_agent_texts(server, session_id, REVIEW_MARK) == 1
    reviews = [m for m in server.messages(session_id) if m["metadata"].get("review")]
    assert [(m["content"], m["turn_id"]) for m in reviews] == [
        ("Review of your changes:\napp.py:1: name it\nFine.", turn_id)
    ]
