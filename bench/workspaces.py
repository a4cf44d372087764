"""Task worktrees: making one of a large repository, and reading a task's changes.

The figures of the workspaces issue:
- making a task's worktree (`GitWorktrees.materialize`, the code a session start runs) of a
  repository with `files` tracked files, one new branch each time;
- `GET /tasks/{id}/changes` on a running server for a worktree with `changed` changed files
  (committed on the task's branch, uncommitted edits, untracked files and deletions), and the
  same read in-process (`read_changes`), to show what the HTTP edge adds;
- the server's CPU per live question -> answer cycle (built-in agent) of a task with a worktree
  beside one without, on the same server, in alternating blocks so drift hits both alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from bench.client import ask_and_wait, new_asking_session
from bench.context import Ctx, progress
from bench.latency import answer_live
from bench.server import BenchServer, fresh_database
from bench.stats import Row, latency_rows
from clarion.workspaces.changes import read_changes
from clarion.workspaces.worktrees import GitWorktrees

REPOSITORY = "bench"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Clarion bench",
    "GIT_AUTHOR_EMAIL": "bench@clarion.invalid",
    "GIT_COMMITTER_NAME": "Clarion bench",
    "GIT_COMMITTER_EMAIL": "bench@clarion.invalid",
}


@dataclass(frozen=True)
class WorkspaceSizes:
    files: int = 10_000  # tracked files in the repository a worktree is made of
    changed: int = 100  # files a task changed, for the changes read
    samples: int = 15
    cycle_blocks: int = 6  # alternating blocks of live cycles, with and without a worktree
    cycles_per_block: int = 10


QUICK = WorkspaceSizes(files=200, changed=6, samples=2, cycle_blocks=2, cycles_per_block=1)
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Timed:
    """Wall seconds per operation, and the CPU seconds all of them took together (the git
    processes included): on a loaded host the wall time waits for the cores, the CPU does not."""

    wall: list[float] = field(default_factory=list)
    cpu_s: float = 0.0

    def cpu_note(self) -> str:
        per = self.cpu_s / len(self.wall) if self.wall else 0.0
        return f"n={len(self.wall)}; {per * 1000:.1f} ms CPU each, git included"


def own_cpu() -> float:
    """This process's CPU seconds and its reaped children's (each git call)."""
    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def server_cpu(pid: int) -> float:
    """A server's CPU seconds with its reaped children's (the git calls of a changes read)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICKS


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _source(n: int) -> str:
    return "".join(f"def function_{n}_{i}(x):\n    return x + {i}\n\n" for i in range(8))


def make_repository(root: Path, files: int) -> Path:
    """A repository on `main` with `files` small Python files in folders of 100."""
    repo = root / "repository"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for n in range(files):
        path = repo / f"pkg{n // 100:03d}" / f"module_{n:05d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(_source(n))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a large repository")
    return repo


def change_files(worktree: Path, changed: int) -> None:
    """`changed` changed files: edits (half of them committed on the task's branch), new
    untracked files and deletions, in a 7:2:1 mix."""
    modules = sorted(worktree.glob("pkg*/module_*.py"))
    edits, added = max(1, changed * 7 // 10), max(1, changed * 2 // 10)
    deleted = max(0, changed - edits - added)
    for path in modules[:edits]:
        path.write_text(path.read_text().replace("return x + 1\n", "return x + 100  # tuned\n"))
    _git(worktree, "add", *[str(p) for p in modules[: edits // 2]])
    _git(worktree, "commit", "-q", "-m", "the agent's first half")
    for n in range(added):
        (worktree / "new" / f"added_{n}.py").parent.mkdir(exist_ok=True)
        (worktree / "new" / f"added_{n}.py").write_text(_source(n))
    for path in modules[edits : edits + deleted]:
        path.unlink()


async def worktree_creation(root: Path, sizes: WorkspaceSizes) -> Timed:
    """Seconds per `materialize` of a new task branch's worktree."""
    repo = await asyncio.to_thread(make_repository, root / "large", sizes.files)
    git = GitWorktrees()
    timed = Timed()
    for i in range(sizes.samples + 1):
        target = root / "worktrees" / f"task-{i}"
        cpu, began = own_cpu(), time.perf_counter()
        await git.materialize(repo, target, f"clarion/task-{i}", "main")
        if i:  # the first one warms git's and the file system's caches
            timed.wall.append(time.perf_counter() - began)
            timed.cpu_s += own_cpu() - cpu
    # None is removed between samples, as tasks' worktrees live side by side until archived: on
    # a file system mounted with `discard`, deleting 10,000 files made the next checkout's
    # writes several times slower (2.9, 6.0, 8.0 s of CPU in a row with removals; 0.35 without).
    return timed


async def _ready_worktree(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    for _ in range(1200):
        task = (await client.get(f"/tasks/{task_id}")).json()["task"]
        worktree = task.get("worktree") or {}
        if worktree.get("state") == "ready":
            return dict(worktree)
        await asyncio.sleep(0.05)
    raise TimeoutError(f"task {task_id}'s worktree never became ready")


async def _changes_task(client: httpx.AsyncClient) -> tuple[str, str, dict[str, Any]]:
    """A task with a repository, its session's agent started: (task, session, worktree)."""
    created = await client.post("/tasks", json={"title": "bench changes", "repository": REPOSITORY})
    task_id = str(created.json()["task"]["id"])
    started = await client.post(
        f"/tasks/{task_id}/task-sessions", json={"agent": "builtin", "prompt": "hi"}
    )
    session_id = str(started.json()["session"]["id"])
    return task_id, session_id, await _ready_worktree(client, task_id)


async def _plain_asking_session(ctx: Ctx) -> str:
    """A task without a repository whose session asked and was answered once."""
    plain = await ctx.api.create_task("bench cycles, no repository")
    session_id, pending_id = await new_asking_session(ctx.api, ctx.feed, plain)
    await answer_live(ctx, session_id, pending_id)
    return session_id


async def _changes_over_http(
    client: httpx.AsyncClient, pid: int, task_id: str, sizes: WorkspaceSizes
) -> Timed:
    over_http = Timed()
    for i in range(sizes.samples + 2):
        cpu, began = server_cpu(pid), time.perf_counter()
        response = await client.get(f"/tasks/{task_id}/changes")
        elapsed = time.perf_counter() - began
        used = server_cpu(pid) - cpu
        response.raise_for_status()
        files = len(response.json()["files"])
        if files != sizes.changed:
            raise AssertionError(f"{files} changed files read, {sizes.changed} made")
        if i >= 2:
            over_http.wall.append(elapsed)
            over_http.cpu_s += used
    return over_http


@dataclass
class OnServer:
    over_http: Timed
    in_process: Timed
    cycle_cpu: dict[bool, Timed]  # with a worktree (True) and without


async def live_cycles(
    ctx: Ctx, sessions: dict[bool, str], sizes: WorkspaceSizes
) -> dict[bool, Timed]:
    """The server's own CPU per live cycle (ask, answer, the agent's reply, turn end) of each
    session, the two taking turns block by block."""
    assert ctx.server.proc is not None
    pid = ctx.server.proc.pid
    timed = {True: Timed(), False: Timed()}
    pending = {}
    for with_worktree, session_id in sessions.items():
        pending[with_worktree] = await ask_and_wait(ctx.api, ctx.feed, session_id)
        await answer_live(ctx, session_id, pending[with_worktree])  # warm-up
    for _ in range(sizes.cycle_blocks):
        for with_worktree, session_id in sessions.items():
            cpu, began = server_cpu(pid), time.perf_counter()
            for _ in range(sizes.cycles_per_block):
                pending_id = await ask_and_wait(ctx.api, ctx.feed, session_id)
                await answer_live(ctx, session_id, pending_id)
            spent, took = server_cpu(pid) - cpu, time.perf_counter() - began
            timed[with_worktree].cpu_s += spent
            timed[with_worktree].wall += [took / sizes.cycles_per_block] * sizes.cycles_per_block
    return timed


async def on_server(root: Path, sizes: WorkspaceSizes) -> OnServer:
    """Seconds per GET /changes on a running server, and per in-process `read_changes`, of a
    worktree of a `sizes.files`-file repository with `sizes.changed` changed files; then the
    server's CPU per live cycle with and without a worktree."""
    repo = await asyncio.to_thread(make_repository, root / "changes", sizes.files)
    workdir = root / "changes" / "server"
    workdir.mkdir()
    async with fresh_database("sqlite", workdir) as url:
        server = BenchServer(
            url,
            workdir,
            extra_config=f"[repositories.{REPOSITORY}]\npath = {json.dumps(str(repo))}\n",
        )
        await server.start()
        try:
            ctx = await Ctx.connect("sqlite", server)
            try:
                async with httpx.AsyncClient(base_url=server.api, timeout=60) as client:
                    # Both agents start at once, before anything is measured: an agent start
                    # is seconds of wall time, and the smoke run of these rows is mostly that.
                    (task_id, changes_session, worktree), plain_session = await asyncio.gather(
                        _changes_task(client), _plain_asking_session(ctx)
                    )
                    path = Path(worktree["path"])
                    await asyncio.to_thread(change_files, path, sizes.changed)
                    assert server.proc is not None
                    over_http = await _changes_over_http(client, server.proc.pid, task_id, sizes)
                progress("workspaces: live cycles with and without a worktree")
                # The task whose changes were read is the one with a worktree.
                sessions = {True: changes_session, False: plain_session}
                cycle_cpu = await live_cycles(ctx, sessions, sizes)
            finally:
                await ctx.close()
        finally:
            server.stop()
    in_process = Timed()
    for i in range(sizes.samples + 2):
        cpu, began = own_cpu(), time.perf_counter()
        await read_changes(path, worktree["base"], max_patch_bytes=256 * 1024)
        if i >= 2:
            in_process.wall.append(time.perf_counter() - began)
            in_process.cpu_s += own_cpu() - cpu
    return OnServer(over_http, in_process, cycle_cpu)


async def rows(root: Path, sizes: WorkspaceSizes) -> list[Row]:
    progress(f"workspaces: worktrees of a {sizes.files:,}-file repository")
    made = await worktree_creation(root, sizes)
    progress(f"workspaces: changes of {sizes.changed} files")
    served = await on_server(root, sizes)
    over_http, in_process = served.over_http, served.in_process
    files = f"{sizes.files:,}-file repository"
    changed = f"{sizes.changed} changed files ({files})"
    measured = [
        ("git", f"task worktree made, {files}", made, 1000),
        ("sqlite", f"GET /tasks/{{id}}/changes, {changed}", over_http, 100),
        ("git", f"read_changes in-process, {changed}", in_process, None),
    ]
    out = []
    for db, name, timed, target in measured:
        p50 = latency_rows(db, name, timed.wall, p50_target=target, p99_target=None)[0]
        out.append(replace(p50, note=timed.cpu_note()))
    cycles = sizes.cycle_blocks * sizes.cycles_per_block
    per = {k: t.cpu_s / max(1, len(t.wall)) for k, t in served.cycle_cpu.items()}
    ratio = per[True] / per[False] if per[False] else float("nan")
    out.append(
        Row(
            "sqlite",
            "server CPU per live cycle (builtin agent), task with a worktree / without",
            f"{ratio:.2f}x",
            "<= 1.15x",
            ratio <= 1.15,
            f"{per[True] * 1000:.1f} ms vs {per[False] * 1000:.1f} ms; {cycles} cycles each, "
            f"in {sizes.cycle_blocks} alternating blocks",
        )
    )
    return out
