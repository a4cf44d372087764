"""The agent sandbox seen from inside: real bubblewrap processes started the way the runtime
starts agents (`process.spawn` with the profile's sandbox), running small shell commands that
report what they can read and write. Each test builds a Clarion home, database, config file and
worktrees in its own folder and checks both what the agent sees and what happened outside."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clarion.agents.process import build_env, shut_down, spawn
from clarion.agents.sandbox import git_dirs, mounts
from clarion.config.sandbox import SandboxConfig, agent_home, hidden_paths
from tests.conftest import require_bubblewrap


@pytest.fixture(autouse=True)
def _bubblewrap_works() -> None:
    require_bubblewrap()


RUN_S = 30.0


class Site:
    """A Clarion installation in `root`: home, database, config, two task worktrees."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "clarion-home"
        self.home.mkdir()
        self.database = self.home / "clarion.db"
        self.database.write_text("answer-link secret")
        for suffix in ("-wal", "-shm"):
            Path(f"{self.database}{suffix}").write_text("recent rows")
        self.config = root / "clarion.toml"
        self.config.write_text('webhook_secret = "s3cret"\n')
        self.worktrees = self.home / "worktrees"
        self.mine = self.worktrees / "task-a"
        self.theirs = self.worktrees / "task-b"
        for tree in (self.mine, self.theirs):
            tree.mkdir(parents=True)
            (tree / "README.md").write_text(f"{tree.name} files")

    def sandbox(self, **options: object) -> SandboxConfig:
        hidden = hidden_paths(self.home, f"sqlite:///{self.database}", str(self.config), None)
        home = agent_home(self.home, "agent")
        return SandboxConfig(mode="bwrap", home=home, hidden=hidden, **options)  # type: ignore[arg-type]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


async def run(
    script: str, cwd: Path, sandbox: SandboxConfig | None, env: dict[str, str] | None = None
) -> tuple[str, str]:
    """`script` run by `sh` as an agent in `sandbox`: its stdout and stderr."""
    proc = await spawn(["sh", "-c", script], env or build_env({}, None), str(cwd), sandbox)
    async with asyncio.timeout(RUN_S):
        out, err = await proc.communicate()
    await shut_down(proc, 1.0)
    return out.decode(), err.decode()


def exists(path: Path | str) -> bool:
    return Path(path).exists()


async def test_reading_the_database_config_or_clarion_home_fails_inside_the_sandbox(
    site: Site,
) -> None:
    reads = [site.database, Path(f"{site.database}-wal"), Path(f"{site.database}-shm")]
    reads.append(site.config)
    script = "; ".join(f"cat {p} && echo LEAK" for p in reads)
    script += f"; ls -A {site.home}; ls -A {site.worktrees}; echo done"
    out, _err = await run(script, site.mine, site.sandbox())
    assert "LEAK" not in out and "secret" not in out and "recent rows" not in out
    assert "done" in out
    # Clarion's home shows only what the agent may have: its own home and its own worktree.
    listing = out.split()
    assert "clarion.db" not in listing and "task-b" not in listing
    assert "agent-homes" in listing and "task-a" in listing


async def test_another_tasks_worktree_is_hidden_and_the_own_one_is_writable(site: Site) -> None:
    script = (
        f"cat {site.theirs}/README.md && echo LEAK; "
        "echo changed > README.md && cat README.md; "
        f"echo intruder > {site.theirs}/new.txt && echo WROTE"
    )
    out, _err = await run(script, site.mine, site.sandbox())
    assert "LEAK" not in out and "WROTE" not in out
    assert "changed" in out
    assert (site.mine / "README.md").read_text() == "changed\n"
    assert sorted(p.name for p in site.theirs.iterdir()) == ["README.md"]
    assert (site.theirs / "README.md").read_text() == "task-b files"


async def test_writing_outside_the_working_directory_fails_and_nothing_appears_outside(
    site: Site, tmp_path: Path
) -> None:
    # Beside the working directory under /tmp, outside /tmp, in Clarion's home (hidden) and in
    # the system: each refused, and nothing appeared outside. The sandbox's own /tmp (a private
    # tmpfs) takes a write, which is gone with it.
    targets = [
        tmp_path / "outside.txt",
        Path(os.environ.get("HOME", "/root")) / f".clarion-sandbox-test-{os.getpid()}",
        site.home / "planted.txt",
        Path(f"/usr/planted-{os.getpid()}"),
    ]
    script = "; ".join(f"echo x > {t} || echo REFUSED" for t in targets)
    script += "; echo private > /tmp/scratch && cat /tmp/scratch"
    out, err = await run(script, site.mine, site.sandbox())
    assert out.count("REFUSED") == len(targets), err
    assert err.count("Read-only file system") == len(targets)
    assert out.endswith("private\n")
    assert not [t for t in targets if exists(t)]
    assert not exists("/tmp/scratch")


async def test_extra_read_and_extra_write_widen_the_sandbox(site: Site, tmp_path: Path) -> None:
    shared, scratch = tmp_path / "shared", tmp_path / "scratch"
    shared.mkdir()
    scratch.mkdir()
    (shared / "doc.txt").write_text("readable")
    script = f"cat {shared}/doc.txt; echo no > {shared}/x || echo REFUSED; echo yes > {scratch}/x"
    sandbox = site.sandbox(extra_read=(str(shared),), extra_write=(str(scratch),))
    out, _err = await run(script, site.mine, sandbox)
    assert "readable" in out and "REFUSED" in out
    assert not (shared / "x").exists()
    assert (scratch / "x").read_text() == "yes\n"


async def test_the_agent_home_is_its_own_persistent_and_private(site: Site) -> None:
    sandbox = site.sandbox()
    out, _ = await run('echo "$HOME"; echo kept > "$HOME/state"', site.mine, sandbox)
    assert out.strip() == sandbox.home
    assert sandbox.home is not None
    assert (Path(sandbox.home) / "state").read_text() == "kept\n"
    assert oct(os.stat(sandbox.home).st_mode & 0o777) == "0o700"
    out, _ = await run('cat "$HOME/state"', site.mine, sandbox)  # a later start
    assert out == "kept\n"


async def test_a_program_under_tmp_stays_runnable_and_a_hidden_file_beside_it_stays_hidden(
    site: Site, tmp_path: Path
) -> None:
    program = tmp_path / "tools" / "agent.sh"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\necho running; cat {site.database} && echo LEAK\n")
    program.chmod(0o755)
    proc = await spawn([str(program)], build_env({}, None), str(site.mine), site.sandbox())
    out, _ = await proc.communicate()
    assert out.decode() == "running\n"


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


async def test_committing_inside_a_git_worktree_lands_on_its_branch(site: Site) -> None:
    repo = site.root / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a.txt").write_text("one\n")
    _git("add", "a.txt", cwd=repo)
    _git("commit", "-qm", "first", cwd=repo)
    tree = site.worktrees / "task-c"
    _git("worktree", "add", "-q", "-b", "clarion/task-c", str(tree), "main", cwd=repo)
    assert git_dirs(str(tree)) == str(repo / ".git")
    script = (
        "echo two >> a.txt && git add a.txt && "
        "git -c user.name=agent -c user.email=agent@example.com commit -qm 'by the agent' && "
        "echo COMMITTED; echo hook > "
        + str(repo / ".git" / "hooks" / "post-commit")
        + " || echo HOOKS-REFUSED"
    )
    out, err = await run(script, tree, site.sandbox())
    assert "COMMITTED" in out, err
    assert "HOOKS-REFUSED" in out
    assert _git("log", "-1", "--format=%s", "clarion/task-c", cwd=repo) == "by the agent"
    assert _git("log", "-1", "--format=%s", "main", cwd=repo) == "first"
    assert (repo / "a.txt").read_text() == "one\n"  # the repository's checkout is untouched


async def test_the_environment_holds_only_the_allow_list_with_and_without_the_sandbox(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "CLARION_DATABASE_URL": "postgresql://u:pw@db/clarion",
        "DATABASE_URL": "postgresql://u:pw@db/x",
        "GITHUB_TOKEN": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "k",
        "OPENAI_API_KEY": "sk",
        "SMTP_PASSWORD": "pw",
        "SESSION_SECRET": "s",
    }
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    env = build_env({"ANTHROPIC_API_KEY": "named-by-the-profile"}, None)
    script = "env"
    for sandbox in (site.sandbox(), SandboxConfig(mode="none")):
        out, _ = await run(script, site.mine, sandbox, env)
        seen = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert not set(secrets) & set(seen), sandbox.mode
        assert not [k for k in seen if k.startswith("CLARION_")]
        assert seen["ANTHROPIC_API_KEY"] == "named-by-the-profile"
        assert {"PATH", "HOME"} <= set(seen)
        if sandbox.mode == "bwrap":
            assert seen["HOME"] == sandbox.home


async def test_the_environment_is_not_on_bubblewraps_command_line(site: Site) -> None:
    env = build_env({"SOME_API_KEY": "do-not-show-me"}, None)
    proc = await spawn(["sleep", "30"], env, str(site.mine), site.sandbox())
    try:
        cmdline = await asyncio.to_thread(Path(f"/proc/{proc.pid}/cmdline").read_bytes)
        assert b"bwrap" in cmdline
        assert b"do-not-show-me" not in cmdline
    finally:
        await shut_down(proc, 1.0)


def test_mounts_go_parents_first_and_hiding_the_database_beats_a_wider_bind(site: Site) -> None:
    # The working directory holds Clarion's home and a database outside it: its bind comes
    # before the home's hiding, which comes before the agent's own home inside it; the
    # database file is hidden over the bind, and the one inside the hidden home needs nothing.
    database = site.root / "elsewhere.db"
    database.write_text("rows")
    hidden = hidden_paths(site.home, f"sqlite:///{database}", str(site.config), None)
    sandbox = SandboxConfig(mode="bwrap", home=agent_home(site.home, "a"), hidden=hidden)
    assert sandbox.home is not None
    Path(sandbox.home).mkdir(parents=True)
    order = mounts([sys.executable], {"PATH": os.environ["PATH"]}, str(site.root), sandbox)
    paths = [m[-1] for m in order]
    assert paths.index(str(site.root)) < paths.index(str(site.home)) < paths.index(sandbox.home)
    assert order[paths.index(str(site.home))] == ["--tmpfs", str(site.home)]
    assert order[paths.index(str(database))] == ["--ro-bind", "/dev/null", str(database)]
    assert paths.index(str(database)) > paths.index(str(site.root))
    assert str(site.database) not in paths


def test_coverage_data_folder_handed_down_is_writable_inside(site: Site, tmp_path: Path) -> None:
    from coverage.config import CoverageConfig

    config = CoverageConfig()
    config.data_file = str(tmp_path / "measured" / ".coverage")
    env = {"PATH": os.environ["PATH"], "COVERAGE_PROCESS_CONFIG": config.serialize()}
    measured = str((tmp_path / "measured").resolve())
    (tmp_path / "measured").mkdir()
    order = mounts(["sh"], env, str(site.mine), site.sandbox())
    assert ["--bind", measured, measured] in order
    garbled = {**env, "COVERAGE_PROCESS_CONFIG": "not base64 json"}
    assert all(measured not in m for m in mounts(["sh"], garbled, str(site.mine), site.sandbox()))
