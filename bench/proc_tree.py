"""The processes below a process and their resident memory, read from /proc (Linux).

A server's agents run as its children (each with a process-group guard beside it); what they
hold is the RSS of every process below the server, counted once each.
"""

from __future__ import annotations

import os

from bench.footprint import rss_bytes


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its agents, and anything they started)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found


def rss_of(pids: list[int]) -> list[int]:
    """The RSS (bytes) of each process of `pids` still there."""
    sizes: list[int] = []
    for pid in pids:
        try:
            sizes.append(rss_bytes(pid))
        except (OSError, RuntimeError):
            continue  # exited meanwhile, or a zombie with no memory left
    return sizes


def running_command(pids: list[int], needle: str) -> list[int]:
    """The processes of `pids` whose command line holds `needle` (and that are not zombies).

    A sandboxed agent's bubblewrap processes (the one Clarion starts and its child inside the
    new pid namespace) carry the agent's command line too; they are the sandbox, not agents."""
    found: list[int] = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].rsplit(b"/", 1)[-1] == b"bwrap":
            continue
        command = b" ".join(argv).decode(errors="replace")
        if needle in command:  # a zombie's command line reads empty
            found.append(pid)
    return found
