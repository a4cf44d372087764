"""Statements per cycle: every SQL statement the server sends its database, counted inside it.

Statement counts are exact where CPU and latency figures move with the host's load, so they
are the figure to compare between commits on a busy machine. `python -m bench.statements
serve ...` runs `clarion serve` with a counter installed (classes patched at run time; nothing
in `src/` changes):

- statements: SQLAlchemy's `before_cursor_execute`, registered on every engine (on PostgreSQL
  each is one round trip), plus the fast path's plans, which run on the raw driver below
  SQLAlchemy (`SqlitePlan.run`, `AsyncpgPlan.run`, counted when they ran rather than handing
  back).
  Transaction control (BEGIN, COMMIT) is not a statement here: the commit rows count commits;
- transaction control (PostgreSQL): the BEGIN, COMMIT and ROLLBACK the driver sends (asyncpg
  `Connection.execute` with no arguments), one round trip each, so that the statements, these
  and the prepares are every round trip of the cycle;
- prepares (PostgreSQL): asyncpg `Connection.prepare` calls, one more round trip each, made
  when a statement is not in the connection's prepared-statement cache yet.

The counts live in a small file (`COUNTER_ENV`) mapped into memory, so the benchmark reads
them at any moment without asking the server. `measure` starts such a server on a fresh
database and counts two cycles, each from the start of the cycle until the server is quiet
(its follow-up work included), the median over `cycles` repetitions after a warm-up:

- live: one simulated agent's cycle (`bench.simulated`): the MCP tool call asks, the answer is
  POSTed, the call returns, the task summary is clean again;
- detached: the answer to a detached question of the built-in agent (`/scenario ask-timeout`)
  -> 200 resumed -> the successor turn has completed and the server is quiet.

Each is counted twice: in a workspace with no waiting policy, and in one whose policy reminds,
escalates and expires (`POLICY`, deadlines hours away, so none fires during the cycle): the
difference is what a policy costs a question exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import mmap
import os
import secrets
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.client import ask_detaching, new_idle_session
from bench.context import Ctx, progress
from bench.latency import answer_detached, wait_detached
from bench.server import BenchServer, fresh_database, postgres_reachable
from bench.simulated import SimulatedAgent, relay_session
from bench.stats import Row, render

COUNTER_ENV = "CLARION_BENCH_STATEMENTS"
# Also append every counted statement's SQL, one line each, to this file (reading aid).
LOG_ENV = "CLARION_BENCH_STATEMENTS_LOG"
_LAYOUT = struct.Struct("<QQQ")  # statements, prepares, transaction control
# Quiet: no statement for this long after a cycle's last awaited event.
QUIET_S = 0.5
WARMUP = 2
# A workspace whose questions wait under a policy that can fire (remind, escalate, expire).
POLICY_WORKSPACE = "bench-policy"
POLICY = f"""
[workspaces.{POLICY_WORKSPACE}.waiting]
remind_after = "8h"
escalate_after = "12h"
escalate_to = ["on-call"]
expire_after = "2d"
on_expiry = "skip"
"""


@dataclass(frozen=True)
class Counts:
    statements: int
    prepares: int
    control: int = 0  # BEGIN, COMMIT, ROLLBACK (PostgreSQL)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.statements - other.statements,
            self.prepares - other.prepares,
            self.control - other.control,
        )

    @property
    def round_trips(self) -> int:
        return self.statements + self.prepares + self.control


@dataclass(frozen=True)
class PerCycle:
    """Median statements (and prepares) per cycle over the measured repetitions."""

    live: Counts
    detached: Counts
    cycles: int
    # The same cycles of a question asked under a waiting policy (`POLICY`).
    policy_live: Counts
    policy_detached: Counts


class Counter:
    """The benchmark's view of a counting server's file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> Counts:
        data = self.path.read_bytes()
        return Counts(*_LAYOUT.unpack_from(data))

    async def quiet(self, limit: float = 60) -> Counts:
        """The counts once they have not moved for `QUIET_S`."""
        deadline = time.perf_counter() + limit
        last = self.read()
        while time.perf_counter() < deadline:
            await asyncio.sleep(QUIET_S)
            now = self.read()
            if now == last:
                return now
            last = now
        raise RuntimeError(f"the server never went quiet: {last}")


def _install(path: str) -> None:
    """Count in this process (the server's), writing the counts to `path`."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from clarion.store.db import fastpath, fastpath_asyncpg

    Path(path).write_bytes(bytes(_LAYOUT.size))
    with open(path, "r+b") as f:
        counts = mmap.mmap(f.fileno(), _LAYOUT.size)
    state = [0, 0, 0]
    log_path = os.environ.get(LOG_ENV)
    log = open(log_path, "a", buffering=1) if log_path else None  # noqa: SIM115 - lives as long as the process

    def bump(i: int, sql: str = "") -> None:
        state[i] += 1
        _LAYOUT.pack_into(counts, 0, *state)
        if log is not None:
            log.write(("", "PREPARE ", "")[i] + " ".join(sql.split())[:160] + "\n")

    @event.listens_for(Engine, "before_cursor_execute")
    def _statement(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        bump(0, sql)

    sqlite_run = fastpath.SqlitePlan.run
    asyncpg_run = fastpath_asyncpg.AsyncpgPlan.run

    def counted_sqlite(self: fastpath.SqlitePlan, *args: Any, **kwargs: Any) -> Any:
        result = sqlite_run(self, *args, **kwargs)
        if result is not None:  # None: it handed the statement back to SQLAlchemy
            bump(0, self._sql)
        return result

    async def counted_asyncpg(self: fastpath_asyncpg.AsyncpgPlan, *args: Any, **kw: Any) -> Any:
        result = await asyncpg_run(self, *args, **kw)
        if result is not None:
            bump(0, self._sql)
        return result

    fastpath.SqlitePlan.run = counted_sqlite  # type: ignore[method-assign]
    fastpath_asyncpg.AsyncpgPlan.run = counted_asyncpg  # type: ignore[method-assign]
    try:
        import asyncpg
    except ImportError:  # pragma: no cover - asyncpg is a dependency
        return
    prepare = asyncpg.Connection.prepare

    async def counted_prepare(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        bump(1, query)
        return await prepare(self, query, *args, **kwargs)

    asyncpg.Connection.prepare = counted_prepare
    execute = asyncpg.Connection.execute

    async def counted_execute(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        # A transaction's BEGIN and its end are sent this way, with no arguments.
        if not args and query.lstrip()[:8].upper().startswith(("BEGIN", "COMMIT", "ROLLBACK")):
            bump(2, query)
        return await execute(self, query, *args, **kwargs)

    asyncpg.Connection.execute = counted_execute


def main() -> None:
    """`serve ...` with `COUNTER_ENV` set: the counting server. Otherwise these rows alone,
    measured and printed (`python -m bench.statements [--db sqlite,postgres] [--cycles N]`)."""
    if sys.argv[1:2] == ["serve"] and os.environ.get(COUNTER_ENV):
        _install(os.environ[COUNTER_ENV])
        from clarion.cli import main as cli_main

        sys.argv = ["clarion", *sys.argv[1:]]
        cli_main()
        return
    parser = argparse.ArgumentParser(prog="python -m bench.statements", description=__doc__)
    parser.add_argument("--db", default="sqlite,postgres", help="comma list: sqlite,postgres")
    parser.add_argument("--cycles", type=int, default=5, help="measured cycles of each kind")
    args = parser.parse_args()
    print(render(asyncio.run(_all_rows(args.db.split(","), args.cycles))), flush=True)


async def _all_rows(dbs: list[str], cycles: int) -> list[Row]:
    out: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="clarion-bench-") as tmp:
        for db in dbs:
            if db == "postgres" and not await postgres_reachable():
                out.append(Row(db, "all", "skipped", note="PostgreSQL unreachable"))
                continue
            out += await rows(db, Path(tmp), cycles)
    return out


def counting_server(url: str, workdir: Path) -> tuple[BenchServer, Counter]:
    path = workdir / f"statements-{secrets.token_hex(4)}.bin"
    repo_root = Path(__file__).resolve().parent.parent
    server = BenchServer(
        url,
        workdir,
        launcher=[sys.executable, "-m", "bench.statements"],
        extra_config=POLICY,
        extra_env={
            COUNTER_ENV: str(path),
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(repo_root), os.environ.get("PYTHONPATH")])
            ),
        },
    )
    return server, Counter(path)


async def _live(
    ctx: Ctx, counter: Counter, cycles: int, workspace: str | None = None
) -> list[Counts]:
    task_id = await ctx.api.create_task("statements, live", workspace=workspace)
    session_id, endpoint = await relay_session(ctx, task_id)
    seen: list[Counts] = []
    async with SimulatedAgent.connect(ctx, session_id, endpoint) as agent:
        # One cycle's quiet end is the next one's start: nothing runs between them.
        quiet = await counter.quiet()
        for i in range(WARMUP + cycles):
            before = quiet
            await agent.cycle(quiet_task_id=task_id)
            quiet = await counter.quiet()
            if i >= WARMUP:
                seen.append(quiet - before)
    await ctx.api.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})
    return seen


async def _detached(
    ctx: Ctx, counter: Counter, cycles: int, workspace: str | None = None
) -> list[Counts]:
    task_id = await ctx.api.create_task("statements, detached", workspace=workspace)
    session_id = await new_idle_session(ctx.api, task_id)
    seen: list[Counts] = []
    for i in range(WARMUP + cycles):
        pending_id = await ask_detaching(ctx.api, ctx.feed, session_id)
        await wait_detached(ctx, session_id, pending_id)
        before = await counter.quiet()
        await answer_detached(ctx, session_id, pending_id)
        if i >= WARMUP:
            seen.append(await counter.quiet() - before)
    await ctx.api.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})
    return seen


def _median(seen: list[Counts]) -> Counts:
    return Counts(
        round(statistics.median(c.statements for c in seen)),
        round(statistics.median(c.prepares for c in seen)),
        round(statistics.median(c.control for c in seen)),
    )


async def measure(db: str, workdir: Path, cycles: int) -> PerCycle:
    async with fresh_database(db, workdir) as url:
        server, counter = counting_server(url, workdir)
        await server.start()
        ctx = await Ctx.connect(db, server)
        try:
            live = await _live(ctx, counter, cycles)
            detached = await _detached(ctx, counter, cycles)
            policy_live = await _live(ctx, counter, cycles, POLICY_WORKSPACE)
            policy_detached = await _detached(ctx, counter, cycles, POLICY_WORKSPACE)
        finally:
            await ctx.close()
            server.stop()
    progress(
        f"{db}: statements counted over {cycles} live and {cycles} detached cycles,"
        " without and with a waiting policy"
    )
    return PerCycle(
        _median(live),
        _median(detached),
        cycles,
        policy_live=_median(policy_live),
        policy_detached=_median(policy_detached),
    )


async def rows(db: str, workdir: Path, cycles: int) -> list[Row]:
    """The table's rows, measured on a server of their own (the counter costs a little CPU)."""
    r = await measure(db, workdir, cycles)
    out: list[Row] = []
    for what, counts, plain in (
        ("live cycle (MCP client)", r.live, None),
        ("detached cycle", r.detached, None),
        ("live cycle (MCP client), waiting policy", r.policy_live, r.live),
        ("detached cycle, waiting policy", r.policy_detached, r.detached),
    ):
        note = f"median of {r.cycles}; BEGIN/COMMIT not counted"
        if db == "postgres":
            note += (
                f"; {counts.round_trips} round trips with {counts.control} BEGIN/COMMIT and"
                f" {counts.prepares} prepared anew"
            )
        if plain is not None:
            extra = counts.statements - plain.statements
            note = f"remind, escalate, expire configured, none due; {extra:+d} on no policy; {note}"
            if counts is r.policy_detached:
                note += "; from the answer on (the ask's deadline row is in the live row)"
        out.append(Row(db, f"statements per {what}", str(counts.statements), note=note))
    return out


if __name__ == "__main__":
    main()
