"""Fixtures for driving the `clarion` client commands against real servers.

`make_server`/`server` are the end-to-end fixtures (re-exported); `shared_server` is one server
per test module, for tests that only add their own tasks and never restart it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import make_server, server
from tests.e2e.harness import ServerProcess

__all__ = ["make_server", "server", "shared_server"]


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("cli-server")
    # The tests answer live questions, some through a terminal dialogue of several prompts: on
    # a loaded or slow host that outlasted the harness's 30 s wait limit, the question detached
    # and the answer resumed a new turn instead. Live questions here stay live.
    proc = ServerProcess(
        database_url=f"sqlite:///{workdir / 'clarion.db'}",
        workdir=workdir,
        env={"CLARION_CLARIFICATION_WAIT_S": "600"},
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
