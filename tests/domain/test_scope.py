"""A recovery's scope: every session, or exactly the ones given."""

from __future__ import annotations

from clarion.domain.scope import EVERY_SESSION, SessionScope


def test_every_session_covers_any_session_and_keeps_every_item() -> None:
    assert EVERY_SESSION.covers("s1")
    assert EVERY_SESSION.pick([("s1", 1), ("s2", 2)], lambda item: item[0]) == [
        ("s1", 1),
        ("s2", 2),
    ]


def test_a_scope_of_some_sessions_keeps_only_their_items_in_order() -> None:
    scope = SessionScope.only(["s2", "s3"])
    assert scope.covers("s2") and not scope.covers("s1")
    items = [("s3", 1), ("s1", 2), ("s2", 3)]
    assert scope.pick(items, lambda item: item[0]) == [("s3", 1), ("s2", 3)]
    assert SessionScope.only([]).pick(items, lambda item: item[0]) == []
