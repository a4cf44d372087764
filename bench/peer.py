"""The peers: the same ask -> answer -> resume cycle in LangGraph with its durable SQLite
checkpointer (`langgraph-checkpoint-sqlite`) and in DBOS Transact's `recv`/`send` on SQLite
(`dbos`), both from the `bench` extra.

Each peer runs in its own fresh interpreter (`python -m bench.peer <kind>`), not inside the
benchmark process: that process holds the MCP and HTTP client libraries, whose heap made the
peer's garbage collections land inside its samples, and DBOS keeps process-wide state and
threads. The child prints one JSON object; `run` returns it as a `PeerResult`.

LangGraph is measured as a user tuning it would run it: one compiled graph and one
`SqliteSaver` reused for every cycle, durability `"sync"` (each checkpoint is written before
`invoke` returns, the same promise as Clarion's commit-then-answer), and a one-node graph whose
node calls `interrupt()` and formats the answer when resumed, so a resume is one super-step.
Timing covers `invoke(Command(resume=...))` alone. `langgraph-as-before` keeps the shape the
earlier table used (a second node for the reply, the default durability `"async"`) to show
where the difference came from. Commits are counted in a separate pass through the sqlite3
trace callback, so the callback costs nothing in the timed cycles.

DBOS: a workflow publishes its question with `set_event`, then waits in `recv`; the cycle's
clock runs from `send` until `recv` returned inside the workflow (the analogue of answer ->
tool return). The notification listener polls SQLite every 1 ms, its minimum.

Neither has HTTP, an agent process or event fan-out: floors, not twins.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import peer_cycles

KINDS = ("langgraph", "langgraph-as-before", "dbos")


@dataclass(frozen=True)
class PeerResult:
    kind: str
    resume: list[float]
    cycles_per_second: float
    commits_per_resume: int | None
    cpu_per_resume: float  # seconds of the peer process's CPU per timed resume, median


def available(kind: str) -> bool:
    module = "dbos" if kind == "dbos" else "langgraph.checkpoint.sqlite"
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run(kind: str, workdir: Path, samples: int) -> PeerResult:
    """Measure one peer in a child interpreter."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.peer", kind, str(workdir), str(samples)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"peer {kind} failed:\n{out.stderr[-4000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return PeerResult(kind=kind, **data)


def _measure(kind: str, workdir: Path, samples: int) -> dict[str, object]:
    cycle, commits = peer_cycles.make(kind, workdir)
    resume: list[float] = []
    cpu: list[float] = []
    began = time.perf_counter()
    for i in range(samples + 3):
        elapsed, cpu_s = cycle()
        if i == 2:
            began = time.perf_counter()  # three warm-up cycles
        if i >= 3:
            resume.append(elapsed)
            cpu.append(cpu_s)
    total = time.perf_counter() - began
    cpu.sort()
    return {
        "resume": resume,
        "cycles_per_second": samples / total,
        "commits_per_resume": commits(),
        "cpu_per_resume": cpu[len(cpu) // 2],
    }


if __name__ == "__main__":
    kind_arg, dir_arg, n_arg = sys.argv[1:4]
    print(json.dumps(_measure(kind_arg, Path(dir_arg), int(n_arg))), flush=True)
    sys.stdout.flush()
    # DBOS leaves non-daemon threads behind; the figure is printed, so leave at once.
    import os

    os._exit(0)
