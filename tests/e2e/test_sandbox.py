"""The agent sandbox end to end: real `clarion serve` processes whose built-in agent runs in
bubblewrap (a real process, not forked from the tests' zygote), driven only through the HTTP
API: what the agent can read, write and see of the environment, the live and detached answers,
the idle stop and the restart, a kill -9 of the server, and what `clarion serve` says when
bubblewrap does not work."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clarion.agents.limits import limits_problem
from tests import forkserver
from tests.conftest import require_bubblewrap
from tests.e2e.harness import RESUME_MARK, ServerProcess, answer, wait_until


@pytest.fixture(autouse=True)
def _bubblewrap_works() -> None:
    require_bubblewrap()


DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(autouse=True)
def real_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    # Servers still forked from the zygote, their agents started for real: in bubblewrap.
    if os.environ.get("CLARION_TEST_FORKSERVER", "1") != "0":
        monkeypatch.setenv("CLARION_TEST_FORKSERVER", "servers")


def _config(server: ServerProcess, body: str) -> None:
    config = server.workdir / "clarion.toml"
    config.write_text(body)
    server.args = ["--config", str(config)]


def _session(server: ServerProcess, session_id: str) -> dict[str, Any]:
    session: dict[str, Any] = server.ok("GET", f"/task-sessions/{session_id}")["session"]
    return session


def _prompt(server: ServerProcess, session_id: str, text: str) -> None:
    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": text})


def _ask_and_reply(server: ServerProcess, session_id: str, text: str, reply_start: str) -> str:
    seen = len(server.agent_texts(session_id))
    _prompt(server, session_id, text)

    def replied() -> str | None:
        texts = server.agent_texts(session_id)[seen:]
        return next((t for t in texts if t.startswith(reply_start)), None)

    found: str = wait_until(replied, timeout=60, what=f"agent reply {reply_start!r}")
    return found


def _descendants(root: int) -> set[int]:
    """Live (not zombie) processes under `root` (Linux: /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("db", DBS)
def test_the_sandboxed_builtin_agent_answers_live_detached_across_idle_stop_and_kill_9(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    _config(server, '[agents.builtin]\nsandbox = "bwrap"\nagent_idle_stop_after = "2s"\n')
    server.start()
    home = server.workdir / "home"

    # What it sees: the session read says bwrap; its environment is the allow-list with its
    # own home; the database, the config file and Clarion's home are out of reach.
    session_id = server.start_session(server.create_task(), "/scenario env")
    env = json.loads(server.wait_for_agent_text(session_id, "env: ").removeprefix("env: "))
    assert _session(server, session_id)["sandbox"] == "bwrap"
    assert env["HOME"] == str((home / "agent-homes" / "builtin").resolve())
    assert not [k for k in env if k.startswith("CLARION_")]
    if db == "sqlite":
        database = server.database_url.removeprefix("sqlite:///")
        reply = _ask_and_reply(server, session_id, f"/scenario read path={database}", "read")
        assert "failed" in reply
    reply = _ask_and_reply(
        server, session_id, f"/scenario read path={server.workdir / 'clarion.toml'}", "read"
    )
    assert "failed" in reply
    planted = server.workdir.parent / "planted.txt"  # outside its working directory
    reply = _ask_and_reply(server, session_id, f"/scenario write path={planted} text=x", "write")
    assert "failed" in reply and "Read-only file system" in reply
    assert not planted.exists()

    # A live answer.
    _prompt(server, session_id, "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    assert server.respond(pending_id, answer("db", "postgres")).status_code == 200
    server.wait_for_agent_text(session_id, "You answered:")

    # The idle stop, and the next prompt starts it again with its conversation (session/load
    # from its persistent home).
    wait_until(
        lambda: _session(server, session_id)["agent_process"] == "stopped",
        timeout=60,
        what="idle stop",
    )
    reply = _ask_and_reply(server, session_id, "/scenario recall", "Remembered:")
    assert reply == "Remembered: /scenario ask"

    # A detached answer, delivered after a kill -9 of the server: no sandboxed process outlives
    # it, and the restarted server starts the agent again in its sandbox.
    asked = set(server.pending_ids(session_id))
    _prompt(server, session_id, "/scenario ask-timeout t=1")
    pending_id = wait_until(
        lambda: next(iter(set(server.pending_ids(session_id)) - asked), None),
        what="second question",
    )
    server.wait_for_state(pending_id, "active_detached")
    assert server.proc is not None
    agents = _descendants(server.proc.pid)
    assert len(agents) >= 3  # bubblewrap, its init in the new pid namespace, the agent
    server.kill()
    wait_until(lambda: not [p for p in agents if _alive(p)], timeout=30, what="agents gone")
    server.start()
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert _session(server, session_id)["sandbox"] == "bwrap"


def _broken_bwrap(folder: Path) -> str:
    """A PATH whose `bwrap` fails as bubblewrap does without user namespaces."""
    fake = folder / "fake-bin"
    fake.mkdir()
    program = fake / "bwrap"
    program.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    program.chmod(0o755)
    return f"{fake}:{os.environ['PATH']}"


def test_serve_exits_2_naming_a_bwrap_profile_bubblewrap_cannot_run(tmp_path: Path) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text('[agents.strict]\ncommand = ["strict-agent"]\nsandbox = "bwrap"\n')
    env = {**os.environ, "PATH": _broken_bwrap(tmp_path), "CLARION_HOME": str(tmp_path / "h")}
    done = forkserver.run(
        ["serve", "--port", "0", "--config", str(config)], env=env, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "'strict'" in done.stderr and "agents.strict.sandbox" in done.stderr
    assert str(config) in done.stderr


@pytest.mark.parametrize("db", DBS)
def test_auto_without_bubblewrap_runs_unsandboxed_says_so_and_keeps_the_environment_clean(
    make_server: Callable[..., ServerProcess], db: str, tmp_path: Path
) -> None:
    server = make_server(
        db=db,
        PATH=_broken_bwrap(tmp_path),
        GITHUB_TOKEN="ghp_server",
        SMTP_PASSWORD="pw",
        DATABASE_URL="postgresql://u:pw@db/x",
    )
    server.start()
    assert "without a sandbox" in server.logs()
    assert "WARNING" in server.logs()
    session_id = server.start_session(server.create_task(), "/scenario env")
    env = json.loads(server.wait_for_agent_text(session_id, "env: ").removeprefix("env: "))
    assert _session(server, session_id)["sandbox"] == "none"
    leaked = [k for k in env if k.startswith("CLARION_") or k.endswith(("_TOKEN", "_URL"))]
    assert leaked == [] and "SMTP_PASSWORD" not in env
    assert env["HOME"] == str((server.workdir / "home" / "agent-homes" / "builtin").resolve())


def test_a_runaway_agent_is_contained_and_the_server_and_other_agents_go_on(
    make_server: Callable[..., ServerProcess],
) -> None:
    from tests.agents.test_agent_limits import ALLOCATE, FORK_BOMB

    if limits_problem() is not None:
        pytest.skip("no writable cgroups here")
    server = make_server()
    py = sys.executable
    bomb, hog = server.workdir / "bomb.py", server.workdir / "hog.py"
    bomb.write_text(FORK_BOMB)
    hog.write_text(ALLOCATE)
    builtin = f"exec {py} -m clarion.agents.builtin"
    _config(
        server,
        f'[agents.bomb]\ncommand = ["sh", "-c", "{py} {bomb} > bomb.txt; {builtin}"]\n'
        "pids_max = 64\n"
        f'[agents.hog]\ncommand = ["sh", "-c", "{py} {hog} || echo $? > hog.txt; {builtin}"]\n'
        'memory_max = "128M"\n',
    )
    server.start()
    bombed = server.start_session(server.create_task(), "/scenario echo after the bomb", "bomb")
    hogged = server.start_session(server.create_task(), "/scenario echo after the hog", "hog")
    calm = server.start_session(server.create_task(), "/scenario echo calm")
    server.wait_for_agent_text(bombed, "echo: after the bomb")
    server.wait_for_agent_text(hogged, "echo: after the hog")
    server.wait_for_agent_text(calm, "echo: calm")
    assert 0 < int((server.workdir / "bomb.txt").read_text().split()[-1]) < 64
    assert (server.workdir / "hog.txt").read_text().strip() in ("137", "-9")
    assert server.proc is not None and server.proc.poll() is None
