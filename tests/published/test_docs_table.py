"""docs/agents.md's compatibility table says `passed` exactly where a test checks that case."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COLUMNS = ("live", "detached", "restart", "permission", "failure")
# The tests behind each column, by name prefix: all of them for Claude Code, the first two of
# each column for the other agents (the variants run once, with Claude Code).
CASES = {
    "live": (
        "test_live_answer_reaches_the_model",
        "test_skip_reaches_the_model",
        "test_multi_question_answers_reach_the_model",
    ),
    "detached": ("test_detached_answer_resumes_the_agent",),
    "restart": ("test_restart_with_a_question_open",),
    "permission": ("test_a_file_write_waits_for_the_persons_permission",),
    "failure": ("test_model_api_failure",),
}
ROWS: dict[str, Path] = {
    "Claude Code": REPO / "tests/published/test_claude_agent.py",
    "Gemini CLI": REPO / "tests/published/test_gemini_agent.py",
    "Codex": REPO / "tests/published/test_codex_agent.py",
    "GitHub Copilot CLI": REPO / "tests/published/test_copilot_agent.py",
    "Qwen Code": REPO / "tests/published/test_qwen_agent.py",
}


def _table_cells(agent: str) -> list[str]:
    for line in (REPO / "docs/agents.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith(agent):
            return cells
    raise AssertionError(f"docs/agents.md has no compatibility row for {agent}")


def _table_row(agent: str) -> dict[str, str]:
    return dict(zip(COLUMNS, _table_cells(agent)[2:], strict=True))


def _test_names(module: Path) -> list[str]:
    tree = ast.parse(module.read_text())
    return [
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    ]


def test_the_compatibility_table_matches_the_published_agent_tests() -> None:
    for agent, module in ROWS.items():
        row, names = _table_row(agent), _test_names(module)
        for column, prefixes in CASES.items():
            needed = prefixes if agent == "Claude Code" else prefixes[:2]
            tested = all(any(n.startswith(p) for n in names) for p in needed)
            assert (row[column] == "passed") == tested, (agent, column, row[column])


def test_each_rows_version_is_the_one_the_tests_install() -> None:
    pinned = json.loads((REPO / "agents/published/package.json").read_text())["dependencies"]
    for agent in ROWS:
        name, version = _table_cells(agent)[:2]
        (package,) = re.findall(r"`(@[^`]+/[^`]+)`", name)
        assert version.split()[0] == pinned[package], (agent, version, pinned[package])
