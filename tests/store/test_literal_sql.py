"""The upgrade preview's literal SQL: each placeholder style takes its value in place, quoted
for its dialect; placeholders inside quoted text, identifiers, comments and dollar-quoted
bodies are left alone."""

from __future__ import annotations

from datetime import UTC, datetime

from clarion.store.db.literal_sql import literal, render


def test_values_are_quoted_for_their_dialect() -> None:
    assert literal(None, "sqlite") == "NULL"
    assert literal(True, "postgresql") == "TRUE"
    assert literal(False, "sqlite") == "0"
    assert literal(7, "sqlite") == "7"
    assert literal("it's", "postgresql") == "'it''s'"
    assert literal(b"\x01\xff", "sqlite") == "X'01ff'"
    assert literal(b"\x01", "postgresql") == "'\\x01'::bytea"
    stamp = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    assert literal(stamp, "postgresql") == "'2026-12-07 09:00:00+00:00'"


def test_each_placeholder_style_takes_its_value() -> None:
    assert render("INSERT INTO t VALUES (?, ?)", (1, "a"), "sqlite") == [
        "INSERT INTO t VALUES (1, 'a')"
    ]
    assert render("INSERT INTO t VALUES ($2::INTEGER, $1)", ("a", 1), "postgresql") == [
        "INSERT INTO t VALUES (1::INTEGER, 'a')"
    ]
    assert render("UPDATE t SET a = :a WHERE b = %(b)s", {"a": 1, "b": "x"}, "postgresql") == [
        "UPDATE t SET a = 1 WHERE b = 'x'"
    ]
    assert render("INSERT INTO t VALUES (?)", [(1,), (2,)], "sqlite") == [
        "INSERT INTO t VALUES (1)",
        "INSERT INTO t VALUES (2)",
    ]
    assert render("CREATE TABLE t (a INTEGER)", (), "sqlite") == ["CREATE TABLE t (a INTEGER)"]


def test_placeholders_in_quoted_text_and_comments_stay() -> None:
    statement = "SELECT '?', \"a?\", x::text -- ?\n, ? /* ? */, $$ $1 ? $$"
    assert render(statement, ("v",), "sqlite") == [
        "SELECT '?', \"a?\", x::text -- ?\n, 'v' /* ? */, $$ $1 ? $$"
    ]
