"""Named fault points at the durable boundaries (contract section 8).

`CLARION_FAILPOINTS="name=action,..."` with action `crash` (exit 137 at once, no cleanup),
`error` (raise InjectedFailure) or `delay_ms:N`. Unset, `hit` is one dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping

from clarion.domain.errors import InjectedFailure

log = logging.getLogger(__name__)

KNOWN_POINTS = frozenset(
    {
        "respond.after_claim",
        "live.before_confirm",
        "resume.after_reserve",
        "resume.agent_ready",
        "resume.after_attempt",
        "resume.dispatch",
        "resume.after_accept",
        "resume.publish",
        "summary.cas",
        "projection.read",
        "startup.reservations",
        "startup.intents",
        # Not in the contract's table: an email the SMTP server accepted, not yet recorded.
        "email.after_send",
        # Not in the contract's table: around `git worktree add` of a task's worktree.
        "worktree.before_add",
        "worktree.after_add",
        # Not in the contract's table: a worktree's row `removed`, its directory not yet.
        "worktree.before_remove",
        # A Slack message posted, its place not yet recorded.
        "slack.after_post",
        # A Slack interaction queued and acknowledged, not yet answered.
        "slack.after_ack",
    }
)

_actions: dict[str, str] = {}


def parse(spec: str) -> dict[str, str]:
    """Parse `name=action,...`; raises ValueError naming the bad entry."""
    actions: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, action = entry.partition("=")
        if not sep:
            raise ValueError(f"unknown fault point in CLARION_FAILPOINTS: {entry!r}")
        name, action = name.strip(), action.strip()
        _check(name, action)
        actions[name] = action
    return actions


def _check(name: str, action: str) -> None:
    if name not in KNOWN_POINTS:
        raise ValueError(f"unknown fault point in CLARION_FAILPOINTS: {name!r}")
    if action not in {"crash", "error"} and not (
        action.startswith("delay_ms:") and action[len("delay_ms:") :].isdigit()
    ):
        raise ValueError(f"bad action for fault point {name}: {action!r}")


def configure(spec: str | Mapping[str, str]) -> None:
    """Replace the set points; validates everything before changing anything."""
    if isinstance(spec, str):
        actions = parse(spec)
    else:
        actions = dict(spec)
        for name, action in actions.items():
            _check(name, action)
    _actions.clear()
    _actions.update(actions)


async def hit(name: str) -> None:
    """Fire the fault point `name` if it is set."""
    action = _actions.get(name)
    if action is None:
        return
    log.warning("fault point fired", extra={"failpoint": name, "action": action})
    if action == "crash":
        os._exit(137)
    if action == "error":
        raise InjectedFailure(f"injected failure at {name}", failpoint=name)
    await asyncio.sleep(int(action[len("delay_ms:") :]) / 1000)
