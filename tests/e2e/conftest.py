"""Fixtures that start real `clarion serve` processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import fresh_database_url, services_required
from tests.e2e.cluster import EXPIRY_TIMEOUT_S, NATS, TIMEOUT_S
from tests.e2e.harness import ServerProcess, running_server

pytestmark = pytest.mark.e2e


def _nats_available() -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", 4222), timeout=1):
            return True
    except OSError:
        return False


def require_nats() -> None:
    if _nats_available():
        return
    if services_required():
        pytest.fail("NATS at nats://127.0.0.1:4222 unreachable")
    pytest.skip("NATS at nats://127.0.0.1:4222 unreachable")


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Factory for server processes on fresh databases; all are killed at teardown."""
    from contextlib import ExitStack

    servers: list[ServerProcess] = []
    with ExitStack() as stack:

        def make(db: str = "sqlite", bus: str = "memory", **env: str) -> ServerProcess:
            url = stack.enter_context(fresh_database_url(db, tmp_path, migrated_ok=True))
            if bus != "memory":
                require_nats()
            workdir = tmp_path / f"server{len(servers)}"
            workdir.mkdir()
            server = ServerProcess(database_url=url, workdir=workdir, bus_url=bus, env=env)
            servers.append(server)
            return server

        try:
            yield make
        finally:
            # A graceful stop lets the server (and its agents) write their coverage data.
            for server in servers:
                server.stop()


@pytest.fixture
def server(make_server: Callable[..., ServerProcess]) -> ServerProcess:
    """A running server on a fresh SQLite database with the in-process bus."""
    s = make_server()
    s.start()
    return s


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One running server (fresh SQLite, in-process bus) for a whole test module, for tests that
    use only tasks and sessions of their own and read nothing server-wide: a start saved per
    test (one per pytest worker that runs any of them)."""
    with running_server(tmp_path_factory.mktemp("module-server")) as server:
        yield server


@pytest.fixture
def cluster_db(tmp_path: Path) -> Iterator[str]:
    """A fresh PostgreSQL database for one cluster test (cluster mode needs NATS too)."""
    require_nats()
    with fresh_database_url("postgres", tmp_path, migrated_ok=True) as url:
        yield url


def _replica_factory(
    tmp_path: Path, cluster_db: str, timeout_s: str
) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def make(*, cluster: bool = True) -> ServerProcess:
        workdir = tmp_path / f"replica{len(started)}"
        workdir.mkdir()
        server = ServerProcess(
            database_url=cluster_db,
            workdir=workdir,
            bus_url=NATS,
            args=["--cluster"] if cluster else [],
            # A live question stays live however slow the machine: these tests assert that a
            # question is still live after starting three replicas and several agents, which
            # the harness's 30 s clarification wait outlasted under load.
            env={"CLARION_REPLICA_TIMEOUT_S": timeout_s, "CLARION_CLARIFICATION_WAIT_S": "600"},
        )
        started.append(server)
        return server

    try:
        yield make
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def replicas(tmp_path: Path, cluster_db: str) -> Iterator[Callable[..., ServerProcess]]:
    """Servers on the one test database; `cluster=False` makes a single-mode server. Their
    replica timeout is generous (TIMEOUT_S): the test waits for no replica's fencing window,
    and a loaded machine must not make one fence itself."""
    yield from _replica_factory(tmp_path, cluster_db, TIMEOUT_S)


@pytest.fixture
def expiring_replicas(tmp_path: Path, cluster_db: str) -> Iterator[Callable[..., ServerProcess]]:
    """The same with a shorter replica timeout (EXPIRY_TIMEOUT_S), for a test that waits for a
    replica that died, froze or was cut off to be adopted once its fencing window has passed."""
    yield from _replica_factory(tmp_path, cluster_db, EXPIRY_TIMEOUT_S)
