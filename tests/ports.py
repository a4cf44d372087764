"""Ports for the tests' servers, from below the kernel's ephemeral range.

A port that `bind(("127.0.0.1", 0))` hands out is one of the kernel's ephemeral ports: free only
until the next outgoing connection (to PostgreSQL, NATS, another test server) is given it as its
local port. Under load that happened between a test choosing the port and its server binding it
("address already in use"). Ports below the ephemeral range are never handed out that way. Each
pytest worker takes its own block of them and walks it from a random place, so that workers,
and two suites running side by side, do not choose the same port at the same time; a port that
something holds is skipped.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

LOWEST = 10_000  # above the well-known and registered ports the services here use
BLOCKS = 16  # pytest workers' blocks; a run without workers uses the last one
_lock = threading.Lock()
_next: list[int] = []


def ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def block(worker: str | None = None) -> range:
    """This worker's ports: `gw3` takes the fourth block."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    index = int(worker[2:]) % BLOCKS if worker.startswith("gw") and worker[2:].isdigit() else -1
    size = (ephemeral_low() - LOWEST) // BLOCKS
    start = LOWEST + (index % BLOCKS) * size
    return range(start, start + size)


def _unused(port: int) -> bool:
    with socket.socket() as probe:  # no SO_REUSEADDR: a port in TIME_WAIT counts as held too
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing listens on or connects from, outside the ephemeral range."""
    ports = block()
    with _lock:
        if not _next:
            _next.append(random.randrange(len(ports)))
        for _ in range(len(ports)):
            port = ports[_next[0] % len(ports)]
            _next[0] += 1
            if _unused(port):
                return port
    raise RuntimeError(f"no unused port in {ports}")
