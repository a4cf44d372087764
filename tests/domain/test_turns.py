"""Turn authority, current-turn ranking, visible history and public metadata."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import pytest

from clarion.domain.models import DISPATCH_KEYS, MetaKey, Turn
from clarion.domain.turns import (
    current_turn,
    is_attempted,
    is_authoritative,
    is_lifecycle,
    is_reservation,
    is_visible,
    public_metadata,
    visible_history,
)

from .builders import turn

PENDING = {MetaKey.PROMPT_DISPATCH_PENDING: True}
ATTEMPTED = {MetaKey.PROMPT_DISPATCH_PENDING: True, MetaKey.PROMPT_DISPATCH_ATTEMPTED: True}
LIFECYCLE = {MetaKey.LIFECYCLE_ONLY: True}


def ids(turns: Iterable[Turn]) -> list[str]:
    return [t.id for t in turns]


def current_id(turns: Iterable[Turn], referenced: Collection[str]) -> str | None:
    found = current_turn(turns, referenced)
    return None if found is None else found.id


# ----------------------------------------------------------------- classification


def test_a_plain_turn_is_authoritative() -> None:
    assert is_authoritative(turn("a"), referenced=False)


def test_an_empty_reservation_is_not_authoritative() -> None:
    reservation = turn("a", **PENDING)
    assert is_reservation(reservation)
    assert not is_authoritative(reservation, referenced=False)


def test_an_attempted_reservation_is_authoritative() -> None:
    reservation = turn("a", **ATTEMPTED)
    assert is_attempted(reservation)
    assert is_authoritative(reservation, referenced=False)


def test_a_reservation_referenced_by_a_message_is_authoritative() -> None:
    assert is_authoritative(turn("a", **PENDING), referenced=True)


@pytest.mark.parametrize("encoding", ["true", "1", 1])
def test_dispatch_flags_accept_every_truthy_encoding(encoding: object) -> None:
    reservation = turn("a", prompt_dispatch_pending=encoding)
    assert not is_authoritative(reservation, referenced=False)
    attempted = turn("b", prompt_dispatch_pending=encoding, prompt_dispatch_attempted=encoding)
    assert is_authoritative(attempted, referenced=False)


@pytest.mark.parametrize("encoding", [False, "false", 0, "yes", None])
def test_a_falsy_pending_marker_is_not_a_reservation(encoding: object) -> None:
    assert not is_reservation(turn("a", prompt_dispatch_pending=encoding))
    assert is_authoritative(turn("a", prompt_dispatch_pending=encoding), referenced=False)


def test_a_falsy_attempt_marker_does_not_make_a_reservation_authoritative() -> None:
    reservation = turn("a", prompt_dispatch_pending=True, prompt_dispatch_attempted="false")
    assert not is_authoritative(reservation, referenced=False)


def test_lifecycle_marker_is_read_with_the_truthy_rule() -> None:
    assert is_lifecycle(turn("a", lifecycle_only=True))
    assert is_lifecycle(turn("a", lifecycle_only="1"))
    assert not is_lifecycle(turn("a", lifecycle_only="TRUE"))
    assert not is_lifecycle(turn("a"))


# ----------------------------------------------------------------- current turn


def test_no_turns_means_no_current_turn() -> None:
    assert current_turn([], set()) is None


def test_the_newest_started_turn_is_current() -> None:
    turns = [turn("a", started=1, completed=2), turn("b", started=3, completed=4)]
    assert current_id(turns, set()) == "b"


def test_an_open_turn_beats_a_completed_turn_that_started_later() -> None:
    turns = [turn("open", started=1), turn("done", started=9, completed=10)]
    assert current_id(turns, set()) == "open"


def test_among_open_turns_the_newest_started_wins() -> None:
    turns = [turn("old", started=1), turn("new", started=2)]
    assert current_id(turns, set()) == "new"


def test_started_at_ties_break_on_created_at_then_id() -> None:
    by_created = [turn("z", started=5, created=1), turn("a", started=5, created=2)]
    assert current_id(by_created, set()) == "a"
    by_id = [turn("a", started=5, created=5), turn("b", started=5, created=5)]
    assert current_id(by_id, set()) == "b"
    assert current_id(list(reversed(by_id)), set()) == "b"


def test_completed_at_is_not_a_filter_a_completed_turn_stays_current() -> None:
    turns = [turn("a", started=1, completed=2)]
    assert current_id(turns, set()) == "a"


def test_a_lifecycle_turn_is_never_current_however_recent_or_open() -> None:
    turns = [turn("conv", started=1, completed=2), turn("boot", started=5, **LIFECYCLE)]
    assert current_id(turns, set()) == "conv"


def test_only_lifecycle_turns_means_no_current_turn() -> None:
    assert current_turn([turn("boot", **LIFECYCLE)], set()) is None


def test_a_referenced_lifecycle_turn_is_still_never_current() -> None:
    assert current_turn([turn("boot", **LIFECYCLE)], {"boot"}) is None


def test_an_empty_reservation_does_not_supersede_the_clarification_turn() -> None:
    turns = [turn("ask", started=1, completed=2), turn("succ", started=3, **PENDING)]
    assert current_id(turns, set()) == "ask"


def test_an_attempted_reservation_supersedes_the_clarification_turn() -> None:
    turns = [turn("ask", started=1, completed=2), turn("succ", started=3, **ATTEMPTED)]
    assert current_id(turns, set()) == "succ"


def test_a_message_referenced_reservation_supersedes_the_clarification_turn() -> None:
    turns = [turn("ask", started=1, completed=2), turn("succ", started=3, **PENDING)]
    assert current_id(turns, {"succ"}) == "succ"


def test_an_open_older_turn_beats_an_authoritative_completed_newer_one() -> None:
    turns = [turn("open", started=1), turn("succ", started=3, completed=4, **ATTEMPTED)]
    assert current_id(turns, set()) == "open"


def test_current_turn_does_not_depend_on_input_order() -> None:
    turns = [
        turn("a", started=1, completed=2),
        turn("b", started=3, completed=4),
        turn("c", started=5, **LIFECYCLE),
        turn("d", started=6, **PENDING),
    ]
    assert current_id(turns, set()) == "b"
    assert current_id(reversed(turns), set()) == "b"


def test_references_to_other_turns_do_not_matter() -> None:
    turns = [turn("ask", started=1, completed=2), turn("succ", started=3, **PENDING)]
    assert current_id(turns, {"ask", "elsewhere"}) == "ask"


# ----------------------------------------------------------------- visible history


def test_history_is_ascending_by_started_created_then_id() -> None:
    turns = [
        turn("c", started=2, created=1),
        turn("b", started=1, created=2),
        turn("a", started=1, created=2),
        turn("d", started=1, created=1),
    ]
    assert ids(visible_history(turns, set())) == ["d", "a", "b", "c"]


def test_history_shows_lifecycle_turns_in_timestamp_order() -> None:
    turns = [turn("conv", started=2), turn("boot", started=1, **LIFECYCLE)]
    assert ids(visible_history(turns, set())) == ["boot", "conv"]


def test_history_ignores_openness_unlike_the_current_turn_ranking() -> None:
    turns = [turn("open", started=1), turn("done", started=2, completed=3)]
    assert ids(visible_history(turns, set())) == ["open", "done"]


def test_history_hides_an_unpublished_reservation() -> None:
    turns = [turn("ask", started=1), turn("succ", started=2, **PENDING)]
    assert ids(visible_history(turns, set())) == ["ask"]
    assert not is_visible(turns[1], referenced=False)


def test_history_hides_an_attempted_reservation_even_though_it_is_authoritative() -> None:
    turns = [turn("ask", started=1), turn("succ", started=2, **ATTEMPTED)]
    assert ids(visible_history(turns, set())) == ["ask"]


def test_history_shows_a_reservation_once_a_message_references_it() -> None:
    turns = [turn("ask", started=1), turn("succ", started=2, **ATTEMPTED)]
    assert ids(visible_history(turns, {"succ"})) == ["ask", "succ"]


def test_history_shows_a_published_successor() -> None:
    published = turn("succ", started=2, **{MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING: True})
    assert ids(visible_history([turn("ask", started=1), published], set())) == ["ask", "succ"]


def test_history_of_nothing_is_empty() -> None:
    assert visible_history([], set()) == []


# ----------------------------------------------------------------- public metadata


def test_public_metadata_strips_every_dispatch_key_and_keeps_the_rest() -> None:
    meta = {key: "x" for key in DISPATCH_KEYS} | {"lifecycle_only": True, "custom": {"a": 1}}
    assert public_metadata(meta) == {"lifecycle_only": True, "custom": {"a": 1}}


def test_public_metadata_does_not_mutate_its_input() -> None:
    meta = {MetaKey.PROMPT_DISPATCH_PENDING: True, "keep": 1}
    public_metadata(meta)
    assert meta == {MetaKey.PROMPT_DISPATCH_PENDING: True, "keep": 1}


def test_public_metadata_of_nothing_is_an_empty_dict() -> None:
    assert public_metadata(None) == {}
    assert public_metadata({}) == {}
