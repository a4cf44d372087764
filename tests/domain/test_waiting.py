"""The waiting policy's pure rules: durations, which policy wins, the deadlines a question
waits under, the reminder after a missed one, and what an expiry answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clarion.domain.errors import InvalidInput
from clarion.domain.models import Question, QuestionOption
from clarion.domain.waiting import (
    OnExpiry,
    Role,
    WaitingPolicy,
    deadlines_for,
    expiry_body,
    expiry_notice,
    next_reminder,
    parse_duration,
    parse_expires_in,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"), [("2s", 2), ("30m", 1800), ("8h", 28800), ("2d", 172800)]
)
def test_durations_are_an_integer_and_a_unit(text: str, seconds: int) -> None:
    duration = parse_duration(text)
    assert duration.seconds == seconds and duration.text == text


@pytest.mark.parametrize("bad", ["", "8", "h", "0s", "-1m", "1.5h", "8 hours", "8H", 8, None])
def test_other_durations_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=r"duration|positive integer"):
        parse_duration(bad)


def test_a_bad_expires_in_is_a_tool_error_naming_the_field() -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_expires_in("soon")
    assert raised.value.field == "expires_in"
    assert parse_expires_in(None) is None


def test_the_profile_wins_key_by_key_over_the_workspace() -> None:
    workspace = WaitingPolicy(
        remind_after=parse_duration("1h"),
        expire_after=parse_duration("8h"),
        on_expiry=OnExpiry.SKIP,
        escalate_to=("bob",),
    )
    profile = WaitingPolicy(expire_after=parse_duration("2h"))
    merged = profile.over(workspace)
    assert merged.expire_after == parse_duration("2h")
    assert merged.remind_after == parse_duration("1h")
    assert merged.on_expiry is OnExpiry.SKIP and merged.escalate_to == ("bob",)


def test_expires_in_shortens_the_expiry_and_never_lengthens_it() -> None:
    policy = WaitingPolicy(expire_after=parse_duration("8h"), on_expiry=OnExpiry.SKIP)
    shorter = deadlines_for(policy, parse_duration("30m"), NOW)
    longer = deadlines_for(policy, parse_duration("2d"), NOW)
    assert shorter is not None and shorter.expire_at == NOW + timedelta(minutes=30)
    assert shorter.expire_after is not None and shorter.expire_after.text == "30m"
    assert longer is not None and longer.expire_at == NOW + timedelta(hours=8)


def test_keep_never_expires_whatever_the_tool_asks() -> None:
    keep = WaitingPolicy(expire_after=parse_duration("8h"))
    assert deadlines_for(keep, parse_duration("1m"), NOW) is None
    assert deadlines_for(None, parse_duration("1m"), NOW) is None


def test_a_policy_that_skips_without_its_own_duration_expires_at_expires_in() -> None:
    due = deadlines_for(WaitingPolicy(on_expiry=OnExpiry.SKIP), parse_duration("10m"), NOW)
    assert due is not None and due.expire_at == NOW + timedelta(minutes=10)
    assert deadlines_for(WaitingPolicy(on_expiry=OnExpiry.SKIP), None, NOW) is None


def test_escalation_needs_someone_to_escalate_to() -> None:
    alone = WaitingPolicy(escalate_after=parse_duration("1h"))
    assert deadlines_for(alone, None, NOW) is None
    named = WaitingPolicy(escalate_after=parse_duration("1h"), escalate_to=("bob",))
    due = deadlines_for(named, None, NOW)
    assert due is not None and due.escalate_at == NOW + timedelta(hours=1)
    assert due.next_due == due.escalate_at


def test_a_role_escalates_to_its_members_in_the_questions_workspace() -> None:
    policy = WaitingPolicy(
        escalate_after=parse_duration("1h"),
        escalate_to=("alice", Role("reviewers"), Role("leads")),
    )
    assert policy.names_roles
    roles = {"reviewers": ("bob", "alice", "carol"), "leads": ("dave",)}
    resolved = policy.with_roles(roles)
    assert resolved.escalate_to == ("alice", "bob", "carol", "dave"), "in order, once each"
    assert not resolved.names_roles
    due = deadlines_for(resolved, None, NOW)
    assert due is not None and due.escalate_to == ("alice", "bob", "carol", "dave")


def test_a_role_the_questions_workspace_lacks_escalates_to_nobody() -> None:
    only_role = WaitingPolicy(escalate_after=parse_duration("1h"), escalate_to=(Role("leads"),))
    assert only_role.with_roles({}).escalate_to == ()
    assert deadlines_for(only_role.with_roles({}), None, NOW) is None
    assert deadlines_for(only_role, None, NOW) is None, "an unresolved role names nobody"


def test_a_policy_without_roles_is_unchanged_by_resolving() -> None:
    users = WaitingPolicy(escalate_to=("bob",))
    assert not users.names_roles and users.with_roles({"x": ("y",)}) is users
    assert WaitingPolicy().with_roles({}) == WaitingPolicy()


def test_the_next_reminder_skips_the_ones_a_stopped_server_missed() -> None:
    due = deadlines_for(WaitingPolicy(remind_after=parse_duration("1h")), None, NOW)
    assert due is not None and due.remind_at == NOW + timedelta(hours=1)
    on_time = next_reminder(due, NOW + timedelta(hours=1))
    assert on_time == NOW + timedelta(hours=2)
    late = next_reminder(due, NOW + timedelta(hours=5, minutes=30))
    assert late == NOW + timedelta(hours=6)


def _question(qid: str, default: str | None) -> Question:
    return Question(
        id=qid,
        title="",
        prompt="?",
        options=(
            QuestionOption("a", "A", default=default == "a"),
            QuestionOption("b", "B", default=default == "b"),
        ),
    )


def test_a_default_expiry_selects_each_questions_default_option() -> None:
    policy = WaitingPolicy(expire_after=parse_duration("8h"), on_expiry=OnExpiry.DEFAULT)
    due = deadlines_for(policy, None, NOW)
    assert due is not None
    body = expiry_body(due, [_question("x", "b"), _question("y", "a")])
    assert body["rejected"] is False
    assert [a["selected_options"] for a in body["answers"]] == [["b"], ["a"]]


def test_a_question_without_a_default_makes_the_whole_bundle_a_skip() -> None:
    policy = WaitingPolicy(expire_after=parse_duration("8h"), on_expiry=OnExpiry.DEFAULT)
    due = deadlines_for(policy, None, NOW)
    assert due is not None
    body = expiry_body(due, [_question("x", "b"), _question("y", None)])
    assert body == {"answers": [], "rejected": True, "reject_reason": "No answer within 8h"}


def test_the_agent_is_told_when_its_question_expires_and_what_then() -> None:
    skip = deadlines_for(
        WaitingPolicy(expire_after=parse_duration("2h"), on_expiry=OnExpiry.SKIP), None, NOW
    )
    notice = expiry_notice(skip)
    assert "2026-01-01T14:00:00+00:00" in notice and "skipped" in notice
    assert expiry_notice(None) == ""


def test_a_policy_without_reminders_has_no_next_reminder() -> None:
    due = deadlines_for(
        WaitingPolicy(escalate_after=parse_duration("1h"), escalate_to=("bob",)), None, NOW
    )
    assert due is not None and due.remind_at is None
    assert next_reminder(due, NOW + timedelta(hours=2)) is None
