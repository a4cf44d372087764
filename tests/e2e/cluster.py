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
    "session_owner",
    "three_replicas",
    "wait_role",
]

NATS = "nats://127.0.0.1:4222"
TIMEOUT_S = "4"  # the replica timeout; short, yet well above a loaded machine's stalls


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
