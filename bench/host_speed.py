"""How fast the host is, read before anything else runs: the row that says whether two tables
came from comparable machines.

Two hosts of one kind ("2 vCPU AMD EPYC") ran the same commit's throughput at 4.2 and 13.5 ms
of server CPU per cycle (`bench.compare` against one old commit on each): the slow one ran in a
nested virtual machine, where a Python loop was as fast as anywhere but every system call cost
several times more. Clarion's cycle is mostly system calls and event-loop wake-ups (sockets,
epoll, SQLite's file locks), so a table's CPU and latency figures scale with the last two
figures here, not with the first. Each is the best of a few repetitions (the least disturbed by
other work): a loaded host reads slower, a slow host reads slower even when idle.

- Python: `sum(range(10**6))`, the interpreter alone.
- system call: `os.stat` of the root directory, one round trip into the kernel.
- loopback echo: one byte to an asyncio echo server over TCP on 127.0.0.1 and back, client and
  server on one event loop: two socket writes, two reads and the loop's polling, as each of
  Clarion's requests has.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from bench.stats import Row


@dataclass(frozen=True)
class HostSpeed:
    python_ms: float
    syscall_us: float
    echo_us: float


@dataclass(frozen=True)
class Reps:
    python_loops: int = 5
    stats: int = 20_000
    echoes: int = 2_000
    rounds: int = 5


QUICK = Reps(python_loops=1, stats=200, echoes=20, rounds=2)


def _python_ms(loops: int) -> float:
    best = float("inf")
    for _ in range(loops):
        began = time.perf_counter()
        sum(range(10**6))
        best = min(best, time.perf_counter() - began)
    return best * 1000


def _syscall_us(calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(calls):
            os.stat("/")
        best = min(best, (time.perf_counter() - began) / calls)
    return best * 1e6


async def _echo_us(echoes: int, rounds: int) -> float:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1):
            writer.write(data)
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    best = float("inf")
    try:
        for _ in range(rounds):
            began = time.perf_counter()
            for _ in range(echoes):
                writer.write(b"x")
                await reader.readexactly(1)
            best = min(best, (time.perf_counter() - began) / echoes)
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
    return best * 1e6


async def measure(reps: Reps = Reps()) -> HostSpeed:
    """The three figures, each the best of `reps.rounds` (the Python loop: of its loops)."""
    return HostSpeed(
        python_ms=_python_ms(reps.python_loops),
        syscall_us=_syscall_us(reps.stats, reps.rounds),
        echo_us=await _echo_us(reps.echoes, reps.rounds),
    )


def row(speed: HostSpeed) -> Row:
    return Row(
        "host",
        "host speed: Python loop; system call; loopback echo",
        f"{speed.python_ms:.1f} ms; {speed.syscall_us:.2f} us; {speed.echo_us:.0f} us",
        note="best of a few, read before the run; CPU and latency figures scale with the "
        "system call and the echo, so compare tables from hosts whose figures match "
        "(bench/host_speed.py)",
    )
