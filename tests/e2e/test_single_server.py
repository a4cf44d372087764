"""One single-mode server per database: a second `clarion serve` on the same database refuses
to start (exit 3, one line naming the first), and a killed server's lock is gone with it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.harness import ServerProcess

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.mark.parametrize("db", DBS)
def test_a_second_server_on_the_same_database_refuses_to_start(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    first = make_server(db=db)
    first.start()
    task_id = first.create_task("kept")
    second = ServerProcess(database_url=first.database_url, workdir=first.workdir / "second")
    second.workdir.mkdir()
    try:
        second.start(wait_ready=False)
        assert second.wait_exit(timeout=180) == 3
        lines = [line for line in second.logs().splitlines() if line.startswith("clarion:")]
        assert len(lines) == 1, second.logs()
        assert first.proc is not None and f"pid {first.proc.pid}" in lines[0]
        assert "host " in lines[0]
        assert first.ok("GET", f"/tasks/{task_id}")["task"]["title"] == "kept"

        first.kill()  # SIGKILL: nothing is cleaned up, the lock goes with the process
        second.start()
        assert second.ok("GET", f"/tasks/{task_id}")["task"]["title"] == "kept"
    finally:
        second.kill()
