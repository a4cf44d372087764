"""Task worktrees in a cluster: two replicas on one machine share the repository and
`worktrees_dir` at the same paths; review and changes are carried to the task's replica, and
after a kill -9 of that replica the adopter's session runs in the same worktree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.e2e.cluster import replica_id, session_owner, wait_role
from tests.e2e.harness import ServerProcess, wait_until
from tests.workspaces.gitrepo import git, make_repository


def test_the_adopter_runs_the_task_in_the_same_worktree_after_its_replica_is_killed(
    expiring_replicas: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    shared = tmp_path / "shared-worktrees"
    config = tmp_path / "clarion.toml"
    config.write_text(f'worktrees_dir = "{shared}"\n[repositories.app]\npath = "{repository}"\n')
    first, second = expiring_replicas(), expiring_replicas()
    for server in (first, second):
        server.args += ["--config", str(config)]
    first.start(wait_ready=False)
    wait_role(first, "active")
    second.start(wait_ready=False)
    wait_role(second, "active")

    task_id = second.ok("POST", "/tasks", 201, json={"title": "t", "repository": "app"})["task"][
        "id"
    ]
    # Created through the first replica, which places it on itself among equals.
    session_id = first.start_session(task_id, "/scenario write path=notes.txt text=before the kill")
    first.wait_for_agent_text(session_id, "wrote notes.txt")
    assert session_owner(first, session_id) == replica_id(first)
    worktree = second.ok("GET", f"/tasks/{task_id}")["task"]["worktree"]
    assert worktree["path"] == str(shared / task_id)
    wait_until(
        lambda: second.ok("GET", f"/task-sessions/{session_id}")["session"]["state"] == "IDLE",
        what="the session idle",
    )

    # Carried to the task's replica from the other one.
    changes = second.ok("GET", f"/tasks/{task_id}/changes")
    assert [f["path"] for f in changes["files"]] == ["notes.txt"]
    second.ok("POST", f"/tasks/{task_id}/review", json={"summary": "keep going"})
    first.wait_for_agent_text(session_id, "Received: Review of your changes:\nkeep going")

    first.kill()
    wait_until(
        lambda: session_owner(second, session_id) == replica_id(second),
        timeout=90,
        what="the survivor adopting the dead replica's session",
    )
    # The adopter's agent starts without the dead replica's agent state (each replica has its
    # own CLARION_HOME), so its first prompt carries a recap; the scenarios come after it.
    second.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "back again"})
    second.wait_for_agent_text(session_id, "back again")
    second.ok(
        "POST", f"/task-sessions/{session_id}/prompt", 202,
        json={"text": "/scenario read path=notes.txt"},
    )  # fmt: skip
    second.wait_for_agent_text(session_id, "read notes.txt: before the kill")
    second.ok(
        "POST", f"/task-sessions/{session_id}/prompt", 202,
        json={"text": "/scenario write path=after.txt text=adopted"},
    )  # fmt: skip
    second.wait_for_agent_text(session_id, "wrote after.txt")
    assert (shared / task_id / "after.txt").read_text() == "adopted"
    branches = git(repository, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    assert sorted(branches) == sorted(["main", f"clarion/{task_id}"])
    assert second.ok("GET", f"/tasks/{task_id}")["task"]["worktree"]["state"] == "ready"
