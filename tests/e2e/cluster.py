"""Helpers of the cluster tests: a replica's health and role, the replica list, three serving
replicas, a session's owner. The `replicas` fixture (tests/e2e/conftest.py) starts them on one
database."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import httpx

from tests.conftest import _pg_connect_kwargs, _run
from tests.e2e.harness import RESUME_MARK, ServerProcess, wait_until

__all__ = [
    "RESUME_MARK",
    "cluster_list",
    "health",
    "replica_id",
    "retrying",
    "session_owner",
    "three_replicas",
    "wait_role",
]

NATS = "nats://127.0.0.1:4222"
# Replica timeouts (a replica heartbeats every quarter of it and fences itself after half of it
# without one; a survivor adopts a dead replica once its last heartbeat is three quarters old).
# Generous where a test waits for no replica's fencing window, so that no load makes one fence
# itself; shorter where a test waits for a dead replica's window, yet with seconds to spare for
# each heartbeat on a loaded machine (`expiring_replicas`, tests/e2e/conftest.py): at 8 s (a
# heartbeat every 2 s, fenced after 4 s without one) a full suite on 2 cores twice lost a replica
# in the middle of a request (the connection closed with no response, as when a replica whose
# heartbeats were starved fences itself).
TIMEOUT_S = "20"
EXPIRY_TIMEOUT_S = "12"


def health(server: ServerProcess) -> tuple[int, dict[str, object]]:
    try:
        response = httpx.get(f"{server.url}/healthz", timeout=2)
    except httpx.HTTPError:  # not listening yet
        return 0, {}
    return response.status_code, response.json()


def cluster_list(server: ServerProcess) -> list[dict[str, object]]:
    replicas: list[dict[str, object]] = server.ok("GET", "/cluster")["replicas"]
    return replicas


def wait_role(server: ServerProcess, role: str, timeout: float = 120) -> str:
    """Wait until the replica serves (200) in `role`; returns its id."""

    def serving() -> bool:
        if server.proc is not None and server.proc.poll() is not None:
            raise AssertionError(f"replica exited with {server.proc.returncode}:\n{server.logs()}")
        status, body = health(server)
        return status == 200 and body.get("role") == role

    wait_until(serving, timeout=timeout, what=f"the replica serving as {role}")
    return str(health(server)[1]["replica"])


def three_replicas(
    replicas: Callable[..., ServerProcess], *, failpoints: str = "", args: Sequence[str] = ()
) -> tuple[ServerProcess, ServerProcess, ServerProcess]:
    """Three serving replicas, the first started alone (with `failpoints`), so that it is the
    oldest: a new session goes to the replica with the fewest sessions, the oldest among
    equals, so the first session created goes to the first. `args` are added to every
    replica's `clarion serve` flags."""
    first = replicas()
    first.args += args
    first.start(failpoints=failpoints, wait_ready=False)
    wait_role(first, "active")
    others = (replicas(), replicas())
    for server in others:
        server.args += args
        server.start(wait_ready=False)
    for server in others:
        wait_role(server, "active")
    return first, others[0], others[1]


def retrying(call: Callable[[], httpx.Response], ceiling_s: float = 120) -> httpx.Response:
    """`call()` again for as long as it answers a retryable 503 (a request that waited for a
    dead replica's adoption longer than its bound, on a loaded machine), as a client would."""

    def settled() -> httpx.Response | None:
        response = call()
        retryable = response.status_code == 503 and response.json()["error"]["retryable"]
        return None if retryable else response

    found = wait_until(settled, timeout=ceiling_s, what="an answer that is not a retryable 503")
    assert isinstance(found, httpx.Response)
    return found


def replica_id(server: ServerProcess) -> str:
    return str(health(server)[1]["replica"])


def session_owner(server: ServerProcess, session_id: str) -> str | None:
    """The replica the session belongs to, as its row says."""

    async def read() -> str | None:
        import asyncpg

        conn = await asyncpg.connect(**_pg_connect_kwargs(server.database_url))
        try:
            owner = await conn.fetchval(
                "SELECT owner_replica_id FROM task_sessions WHERE id = $1", session_id
            )
        finally:
            await conn.close()
        return None if owner is None else str(owner)

    result: str | None = _run(read)
    return result
