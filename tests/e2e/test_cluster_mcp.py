"""An agent's MCP request that reaches another replica than its own: every route works on
every replica.

Agents are given the URL of the replica that runs them, but a load balancer in front of the
replicas (or an agent configured with the cluster's address) can send its MCP traffic to any
replica. That replica proxies it to the session's replica over HTTP and streams the response
back, however long the tool call waits. The agent here is `bench.relay_agent`, a real ACP agent that
hands over its session's MCP URL and secret, so the test can play the agent's MCP client.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.relay_agent import RELAY_DIR_ENV
from bench.simulated import QUESTION, TOOL
from httpx2 import AsyncClient, Timeout
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.cluster import cluster_list, replica_id, three_replicas
from tests.e2e.harness import ServerProcess, answer, wait_until

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]


def test_an_agents_mcp_call_sent_to_another_replica_reaches_its_own_replicas_live_waiter(
    replicas: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    relay_dir = tmp_path / "relay"
    active, b, c = three_replicas(
        replicas, args=["--config", str(_relay_config(tmp_path, relay_dir))]
    )
    active_id = replica_id(active)
    session_id = active.start_session(c.create_task(), "hold the turn", agent="relay")
    endpoint = _endpoint(relay_dir, session_id)
    assert endpoint["url"].startswith(active.url)  # agents are told where they run
    through_other = endpoint["url"].replace(active.url, b.url, 1)

    # Without the session's secret its own replica refuses: the request got there.
    refused = httpx.post(through_other, json={}, timeout=30)
    assert refused.status_code == 401, refused.text

    async def ask_and_be_answered() -> str:
        async with (
            AsyncClient(headers=endpoint["headers"], timeout=Timeout(30.0, read=300.0)) as http,
            Client(streamable_http_client(through_other, http_client=http), mode="legacy") as mc,
        ):
            call = asyncio.ensure_future(mc.call_tool(TOOL, QUESTION))
            pending_id = await asyncio.to_thread(active.wait_for_bundle, session_id)
            # The waiter is the session's replica's: the question is live there.
            state = await asyncio.to_thread(active.wait_for_state, pending_id, "active_live")
            assert state["state"] == "active_live"
            response = await asyncio.to_thread(c.respond, pending_id, answer("db", "sqlite"))
            assert response.status_code == 200, response.text
            assert response.json()["resumed"] is False
            result = await asyncio.wait_for(call, 60)
            return json.dumps(result.model_dump(mode="json"))

    returned = asyncio.run(ask_and_be_answered())
    assert "sqlite" in returned
    # The proxying replica held no waiter and runs no agent; the session's replica served.
    wait_until(
        lambda: (
            {r["id"]: r["sessions"] for r in cluster_list(b)}
            == {r["id"]: (1 if r["id"] == active_id else 0) for r in cluster_list(b)}
        ),
        what="the session's replica counting the one agent, the others none",
    )
    assert "proxy an MCP request" not in b.logs()


def _relay_config(tmp_path: Path, relay_dir: Path) -> Path:
    config = tmp_path / "relay.toml"
    command = ", ".join(json.dumps(part) for part in (sys.executable, "-m", "bench.relay_agent"))
    relay_dir.mkdir(parents=True, exist_ok=True)  # written from inside the agent's sandbox
    config.write_text(
        "[agents.relay]\n"
        f"command = [{command}]\n"
        f"extra_write = [{json.dumps(str(relay_dir))}]\n"
        f"env = {{ {RELAY_DIR_ENV} = {json.dumps(str(relay_dir))}, "
        f"PYTHONPATH = {json.dumps(str(REPO))} }}\n"
    )
    return config


def _endpoint(relay_dir: Path, session_id: str) -> dict[str, Any]:
    def reported() -> dict[str, Any] | None:
        for path in relay_dir.glob("*.json"):
            endpoint: dict[str, Any] = json.loads(path.read_text())
            if endpoint["url"].rstrip("/").endswith(f"/{session_id}"):
                return endpoint
        return None

    found = wait_until(reported, timeout=60, what="the relay agent's MCP endpoint")
    assert isinstance(found, dict)
    return found
