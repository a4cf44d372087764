"""docs/benchmarks.md is a page for a user: the latest table, how to rerun it, and what limits
each missed target, in at most 150 lines. Earlier rounds belong in benchmarks-history.md."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGE = DOCS / "benchmarks.md"
MAX_LINES = 150


def test_the_benchmarks_page_stays_at_most_150_lines() -> None:
    lines = PAGE.read_text().splitlines()
    assert len(lines) <= MAX_LINES, (
        f"docs/benchmarks.md has {len(lines)} lines (at most {MAX_LINES}): move history into "
        "docs/benchmarks-history.md"
    )


def test_the_benchmarks_page_has_the_rerun_the_latest_table_and_the_missed_targets() -> None:
    text = PAGE.read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert [h.split(" (")[0] for h in headings] == [
        "## How to rerun",
        "## Latest run",
        "## What limits each missed target",
    ]
    assert "| db " in text and "benchmarks-history.md" in text
    assert (DOCS / "benchmarks-history.md").exists()
