"""Steps shared by the permission and agent-failure end-to-end tests (real servers, real
built-in agent), spoken only through the contract."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import ServerProcess, wait_until


def permission_rows(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    return [m for m in server.messages(session_id) if m["type"] == "permission_request"]


def wait_for_permission(
    server: ServerProcess, session_id: str, *, status: str = "pending", index: int = 0
) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        rows = permission_rows(server, session_id)
        if len(rows) > index and rows[index]["metadata"]["status"] == status:
            return rows[index]
        return None

    return dict(wait_until(found, timeout=20, what=f"a {status} permission request"))


def permission(server: ServerProcess, message_id: str) -> dict[str, Any]:
    return dict(server.ok("GET", f"/permission/{message_id}"))


def decide(server: ServerProcess, message_id: str, body: dict[str, Any]) -> httpx.Response:
    return server.request("POST", f"/permission/{message_id}/respond", json=body)


def session(server: ServerProcess, session_id: str) -> dict[str, Any]:
    return dict(server.ok("GET", f"/task-sessions/{session_id}")["session"])


def wait_for_session_state(server: ServerProcess, session_id: str, state: str) -> dict[str, Any]:
    return dict(
        wait_until(
            lambda: (s := session(server, session_id))["state"] == state and s,
            timeout=20,
            what=f"session state {state}",
        )
    )


def error_rows(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    return [m for m in server.messages(session_id) if m["type"] == "error"]


def write_config(workdir: Path, profiles: str) -> str:
    path = workdir / "clarion.toml"
    path.write_text(profiles)
    return str(path)


def builtin_command() -> str:
    """The built-in agent's command line as a TOML array."""
    return f'["{sys.executable}", "-m", "clarion.agents.builtin"]'
