"""An agent whose server dies outright exits too, even with a prompt still open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(60)

# Plays a server that starts the built-in agent, opens a session, leaves `ask-silent`'s prompt
# running (the agent holds it until cancelled), prints the agent's pid and waits to be killed.
_FAKE_SERVER = r"""
import json, subprocess, sys, time
agent = subprocess.Popen(
    [sys.executable, "-m", "clarion.agents.builtin"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
)
def send(message):
    agent.stdin.write((json.dumps(message) + "\n").encode())
    agent.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
agent.stdout.readline()
send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})
session = json.loads(agent.stdout.readline())["result"]["sessionId"]
prompt = [{"type": "text", "text": "/scenario stream n=1000000 ms=1000"}]
send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
      "params": {"sessionId": session, "prompt": prompt}})
agent.stdout.readline()  # the first chunk: the prompt is running
print(agent.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waits for its new parent to reap it; it is no longer running.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_builtin_agent_exits_when_its_server_is_killed() -> None:
    with subprocess.Popen([sys.executable, "-c", _FAKE_SERVER], stdout=subprocess.PIPE) as server:
        assert server.stdout is not None
        agent_pid = int(server.stdout.readline())
        assert _alive(agent_pid)
        server.send_signal(signal.SIGKILL)

    deadline = time.monotonic() + 15
    try:
        while _alive(agent_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(agent_pid), "the agent outlived its server"
    finally:
        if _alive(agent_pid):
            os.kill(agent_pid, signal.SIGKILL)
