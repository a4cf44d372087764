"""The MCP SDK is loaded with the first MCP request that passes the secret check, in a worker
thread, and not by a server's start: a server whose agents never ask does not pay for it, and
a replica's event loop never waits for the import."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_sdk_loads_with_the_first_admitted_request_in_a_worker_thread() -> None:
    # A fresh interpreter, so that nothing has imported the SDK yet.
    script = textwrap.dedent(
        """
        import asyncio, sys, threading
        import httpx
        from starlette.applications import Starlette
        from starlette.routing import Route
        import clarion.server.serving  # everything a server imports to start
        from clarion.mcp.tools import McpEndpoint, build_mcp_server
        from clarion.orchestrator.launch import SessionTokens

        assert "mcp" not in sys.modules, "a server's start imported the MCP SDK"
        threads = []

        class Spy:
            def find_spec(self, name, path=None, target=None):
                if name == "mcp":
                    threads.append(threading.current_thread() is threading.main_thread())
                return None

        sys.meta_path.insert(0, Spy())
        INITIALIZE = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}},
        }
        ACCEPT = {"Accept": "application/json, text/event-stream"}

        async def main():
            tokens = SessionTokens()
            secret = tokens.issue("s1")
            endpoint = McpEndpoint(lambda: build_mcp_server(None), tokens)
            app = Starlette(routes=[Route("/mcp/sessions/{session_id}", endpoint=endpoint,
                                          methods=["POST"])])
            transport = httpx.ASGITransport(app=app)
            async with endpoint.running(), httpx.AsyncClient(
                transport=transport, base_url="http://test"
            ) as client:
                refused = await client.post("/mcp/sessions/s1", json=INITIALIZE,
                                            headers={**ACCEPT, "X-Clarion-Token": "wrong"})
                assert refused.status_code == 401, refused.text
                assert "mcp" not in sys.modules, "a refused request loaded the MCP SDK"
                first, second = await asyncio.gather(*(
                    client.post("/mcp/sessions/s1", json=INITIALIZE,
                                headers={**ACCEPT, "X-Clarion-Token": secret})
                    for _ in range(2)
                ))
                assert (first.status_code, second.status_code) == (200, 200), first.text

        asyncio.run(main())
        print("main thread" if threads == [True] else "worker thread" if threads else "none")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "worker thread"
