"""A server loads its MCP server while it launches an agent that discovers its tools as it
starts (every agent but the built-in one), so that the agent's discovery, which some agents
allow only a few seconds, does not wait for the SDK's import."""

from __future__ import annotations

from collections.abc import Callable

from tests.e2e.harness import ServerProcess, wait_until
from tests.e2e.permission_steps import builtin_command, write_config

LOADED = "MCP server loaded"


def test_launching_an_agent_that_discovers_its_tools_loads_the_mcp_server_before_any_request(
    make_server: Callable[..., ServerProcess],
) -> None:
    server = make_server()
    config = write_config(server.workdir, f"[agents.other]\ncommand = {builtin_command()}\n")
    server.env["CLARION_CONFIG"] = config
    server.start()
    assert LOADED not in server.logs()

    # The built-in agent's program under another profile name: it says hello and makes no
    # MCP request at all, so only the launch can have loaded the server.
    task_id = server.create_task()
    session = server.ok(
        "POST", f"/tasks/{task_id}/task-sessions", 201, json={"agent": "other", "prompt": "hi"}
    )["session"]
    server.wait_for_agent_text(session["id"], "Received: hi")
    wait_until(lambda: LOADED in server.logs(), what="the MCP server loaded")
