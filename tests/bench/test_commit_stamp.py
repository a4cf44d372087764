"""An answer's 200 carries the SQLite commits made by the moment the response started, counted
in the server: a commit after that moment is not in it, however soon the benchmark reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench.commit_stamp import HEADER, stamping


def _wal_database(path: Path, commits: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # every commit stays in the WAL
    conn.execute("CREATE TABLE t (x INTEGER)")
    for i in range(commits - 1):
        conn.execute("INSERT INTO t VALUES (?)", (i,))
    return conn


async def test_the_response_start_is_stamped_with_the_commits_made_before_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "stamped.db"
    conn = _wal_database(db, commits=3)
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)
        conn.execute("INSERT INTO t VALUES (99)")  # a write after the response started

    stamped = stamping(send, db)
    start = {"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1")]}
    await stamped(start)
    await stamped({"type": "http.response.body", "body": b"{}"})
    conn.close()

    assert sent[0]["headers"] == [(b"x-a", b"1"), (HEADER, b"3")]
    assert sent[1] == {"type": "http.response.body", "body": b"{}"}
    assert start["headers"] == [(b"x-a", b"1")]  # the server's own message is left as it was
