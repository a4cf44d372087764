"""One real `clarion serve` per module, on a fresh SQLite database, for the hardening suite.

These tests drive Clarion from outside the way a foreign client would (raw HTTP, raw WebSocket
frames, Schemathesis) and then read the server's log: a defect here shows up as a traceback
or a 5xx, so every test ends by checking the log is free of tracebacks.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import ServerProcess, running_server

pytestmark = pytest.mark.e2e


def assert_no_traceback(server: ServerProcess) -> None:
    logs = server.logs()
    assert "Traceback" not in logs, logs[-4000:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("hardening")) as process:
        yield process
