"""Where a profiled server's CPU went, by layer: `python -m bench.profile_layers FILE.raw...`.

Reads py-spy's raw output (collapsed stacks, one `frame;frame;... count` a line, as
`bench.profiled` writes them) and prints three tables of shares, the files summed:

- by layer, from each sample's innermost frame: the code that was running (a C call counts
  in the Python frame that made it: `json.dumps`'s in JSON; the frames in `DRIVER_CALLS`,
  which call the database driver, in the SQL driver, those in `SOCKET_WRITES` in socket
  writes);
- by task: the coroutine at the root of the sample's asyncio task (a request, a background
  job), what the CPU was spent for;
- by Clarion function: the innermost Clarion frame of the sample, with everything it called.

py-spy does not see the garbage collector: a collection counts in the frame whose allocation
set it off (the servers' `clarion_gc_cpu_seconds_total` has its total). Nor does it tell a
thread on a core from one waiting for a core: on a loaded host a sample is a thread that could
run, so shares are of that time, close to CPU shares when every layer waits alike.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

# Top-level package of the frame's file -> layer. Anything else: "other".
LAYERS = {
    "HTTP/ASGI server": (
        "uvicorn",
        "starlette",
        "fastapi",
        "h11",
        "httptools",
        "sse_starlette",
        "hypercorn",  # Restate's Python service
        "h2",
    ),
    "Restate SDK": ("restate",),
    "anyio (streams, task groups)": ("anyio",),
    "MCP SDK": ("mcp", "mcp_types"),
    "pydantic": ("pydantic", "pydantic_core"),
    "JSON": ("json", "orjson"),
    "SQL driver": ("sqlite3", "aiosqlite", "asyncpg"),
    "SQLAlchemy": ("sqlalchemy",),
    "Clarion": ("clarion",),
    "asyncio (Python)": ("asyncio", "uvloop", "selectors", "concurrent", "threading"),
    "NATS client": ("nats",),
    "HTTP client (outbound)": ("httpx", "httpcore", "ssl", "socket", "urllib", "slack_sdk"),
    "logging": ("logging",),
    "OpenTelemetry": ("opentelemetry",),
}
_BY_PACKAGE = {pkg: layer for layer, pkgs in LAYERS.items() for pkg in pkgs}
# Python frames that call the database driver's C code directly (Clarion's fast path, the
# BEGIN it issues, SQLAlchemy's execute and commit, the WAL checkpoint): their own time is the
# driver's, the SQL running, not the caller's.
DRIVER_CALLS = (
    "SqlitePlan.run",
    "AsyncpgPlan.run",
    "configure.<locals>._on_begin",
    "_Checkpointer._checkpoint",
    "DefaultDialect.do_execute",
    "DefaultDialect.do_executemany",
    "DefaultDialect.do_commit",
    "DefaultDialect.do_rollback",
)
# Python frames whose own time is a socket write (`transport.write`, the send syscall below).
SOCKET_WRITES = (
    "RequestResponseCycle.send",
    "WebSocketsSansIOProtocol.send",
    "StreamWriter.write",
    "TCPServer.protocol_send",
)
# The loop's own C code (uvloop: polling, I/O callbacks) shows as its Python caller. On a
# loaded host it also holds the time a woken loop waited for a core.
C_LOOP = "Runner.run"
# Blocking waits py-spy can catch in a thread that has just been woken: not CPU, dropped.
WAITS = ("_worker (concurrent/futures/thread.py:81)", "SocketIO.readinto (socket.py")
_FRAME = re.compile(r"^(?P<fn>.*) \((?P<file>[^():]*)(?::\d+)?\)$")
TOP = 12


def _parts(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame, ""
    return match["fn"], match["file"]


def layer_of(frame: str) -> str:
    fn, file = _parts(frame)
    if fn in DRIVER_CALLS:
        return "SQL driver"
    if fn == C_LOOP:
        return "event loop (uvloop's C loop)"
    if fn in SOCKET_WRITES:
        return "socket writes"
    package = file.split("/")[0].removesuffix(".py")
    return _BY_PACKAGE.get(package, "other")


def _task_root(frames: list[str]) -> str:
    """The frame after the event loop's run: the task's own coroutine."""
    for i, frame in enumerate(frames):
        if frame.startswith(f"{C_LOOP} ") and i + 1 == len(frames):
            return "(the loop itself)"
        if frame.startswith(f"{C_LOOP} "):
            root = frames[i + 1]
            # The supervisor's wrapper runs every background job: name the job instead.
            if root.startswith("_run (clarion/runtime/supervisor.py") and i + 2 < len(frames):
                root = frames[i + 2]
            return re.sub(r":\d+\)$", ")", root)
    return "(stack cut short: not sampled to the loop)"


def _clarion_frame(frames: list[str]) -> str:
    for frame in reversed(frames):
        if "(clarion/" in frame:
            return re.sub(r":\d+\)$", ")", frame)
    return "(no Clarion frame)"


def tally(lines: list[str]) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """Samples by layer, by task and by Clarion function; a blocking wait's are left out."""
    layers: Counter[str] = Counter()
    roots: Counter[str] = Counter()
    clarion: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if frames[-1].startswith(WAITS):
            continue
        layers[layer_of(frames[-1])] += int(count)
        roots[_task_root(frames)] += int(count)
        clarion[_clarion_frame(frames)] += int(count)
    return layers, roots, clarion


def table(title: str, counts: Counter[str], top: int = TOP) -> str:
    total = sum(counts.values()) or 1
    rows = [f"| {title} | share |", "|---|---|"]
    shown = counts.most_common(top)
    rows += [f"| {name} | {100 * n / total:.1f}% |" for name, n in shown]
    rest = total - sum(n for _, n in shown)
    if rest > 0 and len(counts) > top:
        rows.append(f"| ({len(counts) - top} more) | {100 * rest / total:.1f}% |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    lines = [line for path in paths for line in path.read_text().splitlines()]
    layers, roots, clarion = tally(lines)
    print(f"{sum(layers.values())} samples from {len(paths)} file(s)\n")
    print(table("layer (innermost frame)", layers, top=len(LAYERS) + 3), end="\n\n")
    print(table("task (root coroutine)", roots), end="\n\n")
    print(table("innermost Clarion frame", clarion))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
