"""`clarion serve` refusing a bad config file: exit status 2 and one line on stderr."""

from __future__ import annotations

from pathlib import Path

from tests import forkserver


def refused_serve_line(home: Path, config: str) -> str:
    """Start `clarion serve --config config`, expect exit status 2 and one line; return it."""
    done = forkserver.run(
        ["serve", "--port", "0", "--config", config],
        env={"CLARION_HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=Path.cwd(),
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]
