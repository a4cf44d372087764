"""`clarion serve` refusing a bad config file: exit status 2 and one line on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def refused_serve_line(home: Path, config: str) -> str:
    """Start `clarion serve --config config`, expect exit status 2 and one line; return it."""
    done = subprocess.run(
        [sys.executable, "-m", "clarion", "serve", "--port", "0", "--config", config],
        env={"CLARION_HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]
