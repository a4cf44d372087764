"""Database fixtures shared by every suite.

`db_kind` is parametrized over SQLite and PostgreSQL (the PostgreSQL case carries the
`postgres` marker); `db_url` gives each test a brand-new empty database of that kind.
`store_url` is a cheaper variant for suites that only need a database without rows.
`fresh_database_url(kind, tmp_path)` is the same thing as `db_url` as a plain context manager, for
end-to-end tests that hand the URL to `clarion serve --database URL`.

PostgreSQL comes from CLARION_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test).
Each test gets a database of its own while it runs, empty down to its schema: a pytest process
recycles its databases (their `public` schema dropped and made again, any connection a killed
server left behind ended first) and drops them when it finishes. PostgreSQL forces an immediate
checkpoint of the whole cluster for every CREATE DATABASE and DROP DATABASE; one pair per test
made every end-to-end test on PostgreSQL wait for two. When the server is unreachable the
PostgreSQL cases skip, or fail when CI or CLARION_REQUIRE_SERVICES is set.
"""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from tests import forkserver
from tests.untraced import servers_traced

pytest_plugins = ["tests.process_leaks", "tests.cpu_report", "tests.xdist_groups"]

# A run started in the background of a non-interactive shell (`make test &` in a script) inherits
# SIGINT ignored, and an ignored signal stays ignored across exec: every `clarion watch` the tests
# start would then ignore the Ctrl-C that ends it. Python's own handler is not inherited.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

POSTGRES_URL = os.environ.get(
    "CLARION_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
DB_KINDS = ("sqlite", "postgres")


def services_required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("CLARION_REQUIRE_SERVICES"))


def _run(coro_factory: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coro_factory())
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _pg_connect_kwargs(url: str) -> dict[str, Any]:
    parsed = make_url(url)
    return {
        "host": parsed.host or "127.0.0.1",
        "port": parsed.port or 5432,
        "user": parsed.username or "postgres",
        "password": parsed.password,
        "database": parsed.database or "postgres",
        "timeout": 5,
    }


async def _pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(**_pg_connect_kwargs(POSTGRES_URL))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


_pg_status: dict[str, str | None] = {}


def postgres_unavailable() -> str | None:
    """None when PostgreSQL answers, else the reason (cached for the session)."""
    if "reason" not in _pg_status:
        try:
            _run(lambda: _pg_admin("SELECT 1"))
            _pg_status["reason"] = None
        except Exception as exc:
            _pg_status["reason"] = f"PostgreSQL at {POSTGRES_URL} unreachable: {exc!r}"
    return _pg_status["reason"]


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is None:
        return
    if services_required():
        pytest.fail(reason)
    pytest.skip(reason)


def require_bubblewrap() -> None:
    """The agent sandbox's tests need a working bubblewrap: skip without one, or fail where the
    services are required (CI installs Debian's `bubblewrap`)."""
    from clarion.agents.sandbox import bwrap_problem

    reason = bwrap_problem()
    if reason is None:
        return
    if services_required():
        pytest.fail(f"bubblewrap does not work here: {reason}")
    pytest.skip(f"bubblewrap does not work here: {reason}")


# Databases this pytest process made for `fresh_database_url` and no test holds now.
_recycled_databases: list[str] = []
_made_databases: list[str] = []


async def _sole_connection(name: str) -> Any:
    """A connection to database `name` once every other connection to it has been ended."""
    await _pg_admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    import asyncpg

    return await asyncpg.connect(**_pg_connect_kwargs(url))


async def _empty_database(name: str) -> None:
    """Leave database `name` as CREATE DATABASE would: nothing connected, no tables, no rows."""
    conn = await _sole_connection(name)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await conn.close()


async def _delete_rows(conn: Any, tables: list[str]) -> None:
    """Every row of `tables`, in one transaction. DELETE, not TRUNCATE: a test leaves a few
    rows, and TRUNCATE gives every table new files (about 95 ms for the schema's tables against
    5 ms). Foreign keys are not checked meanwhile (replica role), so the order of the tables does
    not matter; the schema has no sequences for RESTART IDENTITY to reset."""
    async with conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for table in tables:
            await conn.execute(f'DELETE FROM "{table}"')


def _migrated_tables() -> frozenset[str]:
    from clarion.store.db import schema

    every = (
        schema.schema,
        schema.auth_schema,
        schema.webhook_schema,
        schema.cluster_schema,
        schema.waiting_schema,
        schema.slack_schema,
    )
    return frozenset({"clarion_schema_version", *(t for m in every for t in m.tables)})


async def _empty_migrated_database(name: str) -> bool:
    """Leave database `name` migrated to the latest schema with no rows and nothing connected,
    if that is what its tables are; False (nothing done but ending its connections) when
    its schema is anything else, for the caller to drop it instead."""
    from clarion.store.db.migrations import LATEST_VERSION

    conn = await _sole_connection(name)
    try:
        tables = {
            r["tablename"]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        if tables != _migrated_tables():
            return False
        if await conn.fetchval("SELECT max(version) FROM clarion_schema_version") != (
            LATEST_VERSION
        ):
            return False
        await _delete_rows(conn, sorted(tables - {"clarion_schema_version"}))
        return True
    finally:
        await conn.close()


async def _reuse_database(name: str, *, migrated_ok: bool) -> None:
    if not migrated_ok or not await _empty_migrated_database(name):
        await _empty_database(name)


@contextmanager
def fresh_database_url(kind: str, tmp_path: Path, *, migrated_ok: bool = False) -> Iterator[str]:
    """A URL (`sqlite:///...` or `postgresql://...`) of an empty database that
    `clarion serve --database URL` can open, the test's alone until the block ends.

    With `migrated_ok` a PostgreSQL database may come already migrated to the latest schema,
    with no rows: what a server makes of an empty one, without dropping and creating every
    table again (a recycled database is emptied in ~10 ms that way, against ~200 ms)."""
    if kind == "sqlite":
        path = tmp_path / f"clarion-{secrets.token_hex(4)}.db"
        yield f"sqlite:///{path}"
        return
    if kind != "postgres":
        raise ValueError(f"unknown database kind {kind!r}")
    require_postgres()
    if _recycled_databases:
        name = _recycled_databases.pop()
        _run(functools.partial(_reuse_database, name, migrated_ok=migrated_ok))
    else:
        name = f"clarion_t_{secrets.token_hex(6)}"
        _run(functools.partial(_pg_admin, f'CREATE DATABASE "{name}" TEMPLATE template0'))
        _made_databases.append(name)
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        _recycled_databases.append(name)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the databases `fresh_database_url` made (each worker drops its own), end the
    servers' fork server."""
    forkserver.shutdown()
    for name in _made_databases:
        _run(functools.partial(_pg_admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    _made_databases.clear()
    _recycled_databases.clear()


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def db_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(db_kind: str, tmp_path: Path) -> Iterator[str]:
    """A brand-new empty database of `db_kind` for this test."""
    with fresh_database_url(db_kind, tmp_path) as url:
        yield url


class _PostgresPool:
    """Databases reused across tests: created once, emptied (not dropped) before each reuse."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.free: list[str] = []


@pytest.fixture(scope="session")
def _postgres_pool() -> Iterator[_PostgresPool]:
    pool = _PostgresPool()
    yield pool
    for name in pool.created:
        _run(functools.partial(_pg_admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _empty_tables(url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(**_pg_connect_kwargs(url))
    try:
        names = [
            r["tablename"]
            for r in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                " AND tablename <> 'clarion_schema_version'"
            )
        ]
        await _delete_rows(conn, names)
    finally:
        await conn.close()


@pytest.fixture
async def store_url(
    db_kind: str, tmp_path: Path, _postgres_pool: _PostgresPool
) -> AsyncIterator[str]:
    """A database with no rows for this test (its schema may already be migrated).

    Cheaper than `db_url` on PostgreSQL: databases are recycled within the session and
    emptied by deleting their rows. Use `db_url` when the test needs a truly empty database.
    """
    if db_kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    require_postgres()
    if _postgres_pool.free:
        name = _postgres_pool.free.pop()
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        await _empty_tables(url)
    else:
        name = f"clarion_t_{secrets.token_hex(6)}"
        await _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE template0')
        _postgres_pool.created.append(name)
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        _postgres_pool.free.append(name)


@pytest.fixture
def new_database_url(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Factory: `new_database_url("sqlite"|"postgres")` -> URL, each dropped at teardown."""
    from contextlib import ExitStack

    with ExitStack() as stack:

        def make(kind: str) -> str:
            return stack.enter_context(fresh_database_url(kind, tmp_path))

        yield make


# The hang guard of a `slow` test without a ceiling of its own: such a test takes over a
# minute on an idle machine, so the default ceiling (pyproject) would turn a loaded machine's
# slowness into a failure.
SLOW_TEST_CEILING_S = 900


# Test packages whose tests each run for seconds (real agents, servers, a browser); they are
# handed out before the many sub-second ones, so that no worker is left alone with them at the end.
HEAVY_PACKAGES = ("published", "e2e", "browser", "hardening", "waiting", "links", "auth", "slack")


def _shared_scope(item: pytest.Item) -> str | None:
    """The module or package whose shared fixture (a server, a browser) this test uses, if any:
    its tests belong on one pytest worker, which then starts that fixture once instead of once
    per worker that happens to run one of them."""
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    if fixtureinfo is None:
        return None
    scopes = {
        fixturedef.scope
        for fixturedefs in fixtureinfo.name2fixturedefs.values()
        for fixturedef in fixturedefs
        if fixturedef.baseid.startswith("tests")
    }
    path = item.nodeid.split("::", 1)[0]
    if "package" in scopes:
        return path.rsplit("/", 1)[0]
    if "module" in scopes:
        return path
    return None


def _heavy(item: pytest.Item) -> bool:
    parts = item.nodeid.split("/")
    return len(parts) > 2 and parts[1] in HEAVY_PACKAGES


_TEST_STARTED = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_TEST_STARTED] = time.time()
    # Before the test's fixtures: a module's shared server starts in its first test's setup.
    forkserver.trace_children(servers_traced(item.nodeid))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report ends with what its servers logged while it ran."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and report.when != "teardown" and _TEST_STARTED in item.stash:
        from tests.e2e.harness import server_log_tails

        for title, text in server_log_tails(item.stash[_TEST_STARTED]):
            report.sections.append((f"server log {title}", text))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (`--dist loadgroup`)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `slow` (each runs for tens of seconds) go first, then the heavy packages',
    in their usual order: the workers start them while the many short tests fill in around
    them, instead of one of them starting last and running alone at the end of the suite.
    Tests sharing a module's or package's server or browser form one xdist group."""
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, not _heavy(item)))
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TEST_CEILING_S))
        scope = _shared_scope(item)
        if scope is not None and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(scope))
