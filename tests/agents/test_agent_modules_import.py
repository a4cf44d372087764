"""The ACP library is imported with the first agent, off the event loop's thread: a replica's
heartbeat (and every other session's answer) must not wait for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_first_agent_start_imports_the_acp_library_in_a_worker_thread() -> None:
    # A fresh interpreter, so that nothing has imported the library yet; the profile's
    # command does not exist, so the start fails right after the import.
    script = textwrap.dedent(
        """
        import asyncio, sys, threading
        from clarion.agents.runtime import AcpRuntime
        from clarion.config import AgentProfile
        from clarion.domain.errors import AgentFailure
        from clarion.ports import AgentLaunch

        assert "acp" not in sys.modules, "the runtime imported the ACP library up front"
        threads = []

        class Spy:
            def find_spec(self, name, path=None, target=None):
                if name == "acp":
                    threads.append(threading.current_thread() is threading.main_thread())
                return None

        sys.meta_path.insert(0, Spy())

        async def main():
            profile = AgentProfile(name="missing", command=("/nonexistent/agent",))
            async with AcpRuntime({"missing": profile}, sink=None) as runtime:
                launch = AgentLaunch("s1", "missing", "http://127.0.0.1:9/mcp", "t")
                try:
                    await runtime.ensure_started(launch)
                except AgentFailure:
                    pass

        asyncio.run(main())
        print("main thread" if threads == [True] else "worker thread" if threads else "none")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "worker thread"
