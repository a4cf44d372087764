"""Runs the web UI's JavaScript unit tests (`node --test tests/web/`) inside the pytest suite.

The browser modules under src/clarion/web/js are plain ES modules with pure logic (the
revision-ordered store, navigation decisions, transcript and answer models); their tests use
Node's built-in runner, so the one pytest command of the README covers them too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

WEB_TESTS = Path(__file__).resolve().parent


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") or os.environ.get("CLARION_REQUIRE_SERVICES"):
            pytest.fail("node is required for the web unit tests but is not on PATH")
        pytest.skip("node is not installed")
    return node


def test_web_javascript_unit_tests_pass() -> None:
    result = subprocess.run(
        [_node(), "--test", str(WEB_TESTS)],
        cwd=WEB_TESTS.parent.parent,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
