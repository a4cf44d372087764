"""Installing a service peer from the lockfiles in its own folder, on first use.

Each peer lives in a folder of bench/ with its own lockfiles: `npm ci` for a server shipped on
npm, `uv sync --frozen` for a Python environment of its own (kept apart from Clarion's, whose
test tools its pins would move). Each function returns why the install failed, or None.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).parent.parent


def npm_ci(folder: Path, wanted: Path) -> str | None:
    if wanted.exists():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"npm not found: {folder.name} comes from npm ({folder.name}/package-lock.json)"
    out = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 or not wanted.exists():
        return f"npm ci in bench/{folder.name} failed: {out.stderr.strip()[-400:] or 'no binary'}"
    return None


def uv_sync(folder: Path, wanted: Path) -> str | None:
    if wanted.exists():
        return None
    uv = REPO / ".tools/bin/uv"
    command = str(uv) if uv.exists() else shutil.which("uv")
    if command is None:
        return f"uv not found (make install puts it in .tools/bin): bench/{folder.name} needs it"
    out = subprocess.run(
        [command, "sync", "--frozen", "--quiet", "--project", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 or not wanted.exists():
        return f"uv sync in bench/{folder.name} failed: {out.stderr.strip()[-400:]}"
    return None
