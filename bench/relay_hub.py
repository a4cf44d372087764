"""Many relay agents in one process: the 1,000-session rows' agent side.

`bench.relay_agent` is one Python process per session, about 40 MiB each: 1,000 of them would
not fit beside the server on the benchmark host, and their start-up would be most of the run.
Here each session's agent command is `socat STDIO UNIX-CONNECT:<socket>`, a process of about
1 MiB that only carries bytes, and this hub, running in the benchmark's process, speaks ACP
on every connection with the relay agent's own code: the server still starts one agent
process per session and talks ACP to it over its pipes, as with any agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import acp

from bench.relay_agent import RelayAgent

_CLOSE_S = 2.0


def socat() -> str | None:
    """socat's path, or None where it is not installed (the rows are then skipped)."""
    return shutil.which("socat")


def hub_profile(name: str, socket_path: Path) -> str:
    """The config file's agent profile whose every start connects to the hub. No sandbox: the
    socket lies outside what a sandbox lets an agent reach, and the row measures the server."""
    command = ", ".join(
        json.dumps(part) for part in (socat() or "socat", "STDIO", f"UNIX-CONNECT:{socket_path}")
    )
    return f'[agents.{name}]\ncommand = [{command}]\nsandbox = "none"\n'


@contextlib.asynccontextmanager
async def relay_hub(socket_path: Path, relay_dir: Path) -> AsyncIterator[None]:
    """Serve ACP on `socket_path`, one relay agent per connection, leaving each session's MCP
    endpoint in `relay_dir` as `bench.relay_agent` does."""
    os.makedirs(relay_dir, exist_ok=True)
    connections: set[asyncio.Task[None]] = set()

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            # acp's names are the client's view: it reads our writer, writes our reader.
            agent = cast(acp.Agent, RelayAgent(relay_dir))
            await acp.run_agent(agent, input_stream=writer, output_stream=reader)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the server stopped the agent
        except asyncio.CancelledError:
            # The hub closing: the connection ends here, and its task ends without an error
            # for asyncio's stream callback to report.
            pass
        finally:
            connections.discard(task)
            writer.close()

    server = await asyncio.start_unix_server(one, path=str(socket_path), limit=2**20)
    try:
        yield
    finally:
        server.close()
        for task in list(connections):
            task.cancel()
        # acp's connection close waits on its own tasks, which a held prompt can keep from
        # ending: what is left after a short while is dropped with the connection.
        if connections:
            await asyncio.wait(list(connections), timeout=_CLOSE_S)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
