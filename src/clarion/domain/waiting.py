"""The waiting policy of a question: reminders, escalation and expiry, and their durations.

Pure; the config reader, the asker and the deadline scheduler import it. A policy comes from
the config file (`[agents.NAME.waiting]`, `[workspaces.NAME.waiting]`: the profile's keys win
over the workspace's); the question's own `expires_in` may shorten its expiry, never lengthen
it. `keep` (the default) never expires a question, and then `expires_in` changes nothing: the
person who configured "wait on" decides, not the agent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from clarion.domain.errors import InvalidInput
from clarion.domain.models import Question


class OnExpiry(StrEnum):
    SKIP = "skip"
    DEFAULT = "default"
    KEEP = "keep"


# An expiry whose answer was not delivered (its claim restored) is due again this much later.
EXPIRY_RETRY_S = 5

# Who answered a bundle, as its read reports it.
ANSWERED_BY_POLICY = "policy"
ANSWERED_BY_PERSON = "person"

_DURATION = re.compile(r"^([0-9]+)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True, slots=True)
class Duration:
    """A positive duration as written (`30m`), so a reason can quote it back as written."""

    text: str
    seconds: int

    @property
    def delta(self) -> timedelta:
        return timedelta(seconds=self.seconds)


def parse_duration(raw: object) -> Duration:
    """`Ns`, `Nm`, `Nh` or `Nd` with N a positive integer; ValueError otherwise."""
    if not isinstance(raw, str):
        raise ValueError('must be a duration string such as "30m", "8h" or "2d"')
    match = _DURATION.match(raw.strip())
    if match is None or int(match.group(1)) <= 0:
        raise ValueError(
            f'must be a positive integer followed by s, m, h or d ("30m", "8h"), got {raw!r}'
        )
    return Duration(raw.strip(), int(match.group(1)) * _UNIT_S[match.group(2)])


@dataclass(frozen=True, slots=True)
class Role:
    """A workspace role named in `escalate_to` (`{ role = "reviewers" }`): the users the
    question's workspace lists under `[workspaces.NAME.roles]`. A table, never a string, so no
    user name can be mistaken for it."""

    name: str


@dataclass(frozen=True, slots=True)
class WaitingPolicy:
    """One config table's keys; None where the table does not set a key."""

    remind_after: Duration | None = None
    escalate_after: Duration | None = None
    # User names and roles; a question's policy has its roles resolved (`with_roles`).
    escalate_to: tuple[str | Role, ...] | None = None
    expire_after: Duration | None = None
    on_expiry: OnExpiry | None = None

    @property
    def names_roles(self) -> bool:
        return any(isinstance(target, Role) for target in self.escalate_to or ())

    def with_roles(self, roles: Mapping[str, Sequence[str]]) -> WaitingPolicy:
        """This policy with each role in `escalate_to` replaced by its members in `roles` (the
        question's workspace's; a role it lacks names nobody), each user once, in order."""
        if not self.names_roles:
            return self
        users: dict[str, None] = {}
        for target in self.escalate_to or ():
            members = roles.get(target.name, ()) if isinstance(target, Role) else (target,)
            users.update(dict.fromkeys(members))
        return replace(self, escalate_to=tuple(users))

    def over(self, base: WaitingPolicy | None) -> WaitingPolicy:
        """This policy's keys, and `base`'s where this one leaves a key unset."""
        if base is None:
            return self
        return WaitingPolicy(
            remind_after=self.remind_after or base.remind_after,
            escalate_after=self.escalate_after or base.escalate_after,
            escalate_to=self.escalate_to if self.escalate_to is not None else base.escalate_to,
            expire_after=self.expire_after or base.expire_after,
            on_expiry=self.on_expiry or base.on_expiry,
        )


@dataclass(frozen=True, slots=True)
class Deadlines:
    """What one question waits under, fixed when it is asked: the times its timers fall due
    and what its expiry answers. Written with the question; the scheduler fires them."""

    waiting_since: datetime
    remind_every: Duration | None
    remind_at: datetime | None
    escalate_at: datetime | None
    escalate_to: tuple[str, ...]
    expire_at: datetime | None
    # The duration the expiry quotes ("No answer within 8h"), and what it answers.
    expire_after: Duration | None
    on_expiry: OnExpiry

    @property
    def next_due(self) -> datetime | None:
        times = [t for t in (self.remind_at, self.escalate_at, self.expire_at) if t is not None]
        return min(times) if times else None


def deadlines_for(
    policy: WaitingPolicy | None, expires_in: Duration | None, now: datetime
) -> Deadlines | None:
    """The deadlines a question asked now waits under, or None when nothing would ever fire
    (no policy, or one that only keeps waiting): such a question costs nothing more."""
    policy = policy or WaitingPolicy()
    on_expiry = policy.on_expiry or OnExpiry.KEEP
    expire_after: Duration | None = None
    if on_expiry is not OnExpiry.KEEP:
        candidates = [d for d in (policy.expire_after, expires_in) if d is not None]
        expire_after = min(candidates, key=lambda d: d.seconds) if candidates else None
    if expire_after is None:
        on_expiry = OnExpiry.KEEP
    escalate_to = tuple(u for u in policy.escalate_to or () if isinstance(u, str))
    escalate_after = policy.escalate_after if escalate_to else None
    if policy.remind_after is None and escalate_after is None and expire_after is None:
        return None
    return Deadlines(
        waiting_since=now,
        remind_every=policy.remind_after,
        remind_at=now + policy.remind_after.delta if policy.remind_after else None,
        escalate_at=now + escalate_after.delta if escalate_after else None,
        escalate_to=escalate_to,
        expire_at=now + expire_after.delta if expire_after else None,
        expire_after=expire_after,
        on_expiry=on_expiry,
    )


def parse_expires_in(raw: object) -> Duration | None:
    """The tool's optional `expires_in`; InvalidInput naming the field when malformed."""
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise InvalidInput(f"expires_in: {exc}", field="expires_in") from None


def next_reminder(deadlines: Deadlines, now: datetime) -> datetime | None:
    """The reminder after the one due now: a whole number of intervals on from the last, past
    `now` (a server that was down sends one reminder, not every one it missed)."""
    if deadlines.remind_at is None or deadlines.remind_every is None:
        return None
    step = deadlines.remind_every.delta
    following = deadlines.remind_at + step
    if following <= now:
        missed = (now - deadlines.remind_at) // step
        following = deadlines.remind_at + step * (missed + 1)
    return following


def expiry_reason(deadlines: Deadlines) -> str:
    after = deadlines.expire_after.text if deadlines.expire_after else "the time allowed"
    return f"No answer within {after}"


def expiry_body(deadlines: Deadlines, questions: Sequence[Question]) -> dict[str, Any]:
    """The respond body the expiry sends: each question's default option, or a Skip quoting
    the duration when the policy skips or any question has no default."""
    skip = {"answers": [], "rejected": True, "reject_reason": expiry_reason(deadlines)}
    if deadlines.on_expiry is not OnExpiry.DEFAULT:
        return skip
    answers = []
    for question in questions:
        default = next((o for o in question.options if o.default), None)
        if default is None:
            return skip
        answers.append(
            {"question_id": question.id, "selected_options": [default.option_id], "custom_text": ""}
        )
    return {"answers": answers, "rejected": False, "reject_reason": ""}


def expiry_notice(deadlines: Deadlines | None) -> str:
    """One sentence telling the agent when its question expires and what happens then."""
    if deadlines is None or deadlines.expire_at is None:
        return ""
    then = (
        "its default option is chosen for you"
        if deadlines.on_expiry is OnExpiry.DEFAULT
        else "it is skipped"
    )
    return f"If nobody answers by {deadlines.expire_at.isoformat()}, {then}."
