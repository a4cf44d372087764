"""`clarion agents check PROFILE`: starts the agent, checks the ACP handshake, the session and
that the agent lists the tools of the MCP endpoint it is given; one row per check, exit 0 when
all pass, 1 when one fails, 2 for an unknown profile or a bad config."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from clarion.cli.app import app

WIDE = {"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb", "CLARION_CONFIG": ""}


def agents_check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["agents", "check", *args], env=WIDE)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout + result.stderr


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if name in line)


def _config(tmp_path: Path, name: str, command: list[str]) -> str:
    path = tmp_path / "clarion.toml"
    quoted = ", ".join(f'"{part}"' for part in command)
    path.write_text(f"[agents.{name}]\ncommand = [{quoted}]\n")
    return str(path)


def test_the_builtin_profile_passes_every_check_and_sees_ask_user_question() -> None:
    code, out = agents_check("builtin")
    assert code == 0, out
    for name in ("command", "acp handshake", "acp session", "ask_user_question"):
        assert " ok " in _row(out, f"builtin: {name}"), out
    assert "FAIL" not in out


def test_a_command_that_does_not_exist_fails_with_command_not_found(tmp_path: Path) -> None:
    config = _config(tmp_path, "ghost", ["no-such-agent-binary-xyz", "--acp"])
    code, out = agents_check("ghost", "--config", config)
    assert code == 1, out
    assert "command not found: no-such-agent-binary-xyz" in _row(out, "ghost: command"), out


def test_a_program_that_never_speaks_acp_fails_with_no_acp_reply_within_the_bound(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, "mute", ["sleep", "60"])
    started = time.monotonic()
    code, out = agents_check("mute", "--config", config, "--timeout", "1")
    assert code == 1, out
    assert " ok " in _row(out, "mute: command"), out
    row = _row(out, "mute: acp handshake")
    assert "FAIL" in row and "no ACP reply in 1 s" in row, out
    # The bound held and the sleeper was stopped, not waited out.
    assert time.monotonic() - started < 30


def test_an_agent_that_never_connects_to_the_mcp_endpoint_fails_with_mcp_server_ignored(
    tmp_path: Path,
) -> None:
    # The built-in agent under another command: it gets the ordinary prompt, which it only
    # acknowledges, and it opens MCP only to call the tool, so it never connects.
    runner = "import runpy; runpy.run_module('clarion.agents.builtin', run_name='__main__')"
    config = _config(tmp_path, "deaf", [sys.executable, "-c", runner])
    code, out = agents_check("deaf", "--config", config, "--prompt-timeout", "20")
    assert code == 1, out
    assert " ok " in _row(out, "deaf: acp session"), out
    row = _row(out, "deaf: ask_user_question")
    assert "FAIL" in row and "MCP server ignored" in row, out


def test_an_unknown_profile_or_a_bad_config_exits_two(tmp_path: Path) -> None:
    code, out = agents_check("nobody")
    assert code == 2
    assert "unknown agent profile 'nobody'" in out and "builtin" in out
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.x]\ncommand = 5\n")
    code, out = agents_check("x", "--config", str(bad))
    assert code == 2, out
    code, out = agents_check("builtin", "--timeout", "0")
    assert code == 2, out
