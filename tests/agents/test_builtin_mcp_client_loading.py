"""The built-in agent loads its MCP client (half of its start-up CPU) only when a prompt names a
scenario that asks, in a background thread; a session that never asks does not pay for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from clarion.agents.scenarios import ASKING, SCENARIOS, may_ask


@pytest.mark.parametrize(
    ("prompt", "asks"),
    [
        ("/scenario ask", True),
        ("/scenario ask-timeout t=1", True),
        ("/scenario permission-then-ask\nmore", True),
        ("/scenario echo hello", False),
        ("/scenario permission", False),
        ("Pick a database", False),
        ("/scenario", False),
    ],
)
def test_a_prompt_may_ask_only_when_it_names_an_asking_scenario(prompt: str, asks: bool) -> None:
    assert may_ask(prompt) is asks


def test_every_asking_scenario_exists() -> None:
    assert set(SCENARIOS) >= ASKING


def test_the_mcp_client_loads_with_the_first_asking_prompt_only() -> None:
    # A fresh interpreter, so that nothing has imported the client yet.
    script = textwrap.dedent(
        """
        import asyncio, sys, threading
        from acp.schema import TextContentBlock
        from clarion.agents.builtin import BuiltinAgent

        class Conn:
            async def session_update(self, **kwargs):
                pass

        def loaded():
            return "clarion.agents.mcp_call" in sys.modules

        async def main():
            agent = BuiltinAgent()
            agent.on_connect(Conn())
            session = (await agent.new_session(cwd="/")).session_id
            for text in ("/scenario echo hi", "Pick a database"):
                await agent.prompt(session, [TextContentBlock(type="text", text=text)])
            before = loaded()
            await agent.prompt(session, [TextContentBlock(type="text", text="/scenario ask")])
            for thread in threading.enumerate():
                if thread is not threading.main_thread():
                    thread.join(60)
            print(before, loaded())

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
