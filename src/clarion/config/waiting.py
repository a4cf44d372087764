"""`[agents.NAME.waiting]`, `[workspaces.NAME.waiting]` and `[workspaces.NAME.roles]` from the
config file.

Imports only the pure domain (the policy and its durations) and the configuration models. A bad
value raises ValueError naming the file and the key, which `clarion serve` prints on one line
before it exits with status 2.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, field_validator

from clarion.config.spec import DurationValue, Spec
from clarion.domain.waiting import OnExpiry, Role, WaitingPolicy

_KEYS = ("remind_after", "escalate_after", "escalate_to", "expire_after", "on_expiry")

# `"role:NAME"` in `escalate_to` names a role, as `{ role = "NAME" }` does: a user whose name
# starts with it is reached through a role.
ROLE_PREFIX = "role:"

# workspace name -> role name -> its users
WorkspaceRoles = Mapping[str, Mapping[str, tuple[str, ...]]]

_SHAPE = 'must be a list of user names, "role:NAME" and { role = "NAME" }'


def _escalate_to(raw: Any) -> tuple[str | Role, ...]:
    """User names, `"role:NAME"` strings and `{ role = "NAME" }` tables."""
    if not isinstance(raw, list):
        raise ValueError(_SHAPE)
    targets: list[str | Role] = []
    for item in raw:
        if isinstance(item, str) and item.strip().startswith(ROLE_PREFIX):
            name: Any = item.strip()[len(ROLE_PREFIX) :]
        elif isinstance(item, str) and item.strip():
            targets.append(item.strip())
            continue
        else:
            name = item.get("role") if isinstance(item, dict) and set(item) == {"role"} else None
        if not isinstance(name, str) or not name.strip():
            raise ValueError(_SHAPE)
        targets.append(Role(name.strip()))
    return tuple(targets)


class WaitingSpec(Spec):
    """One `waiting` table; a key it does not set is None."""

    unknown_says = ".{first}: unknown key; known: " + ", ".join(_KEYS)
    table_says = "must be a table"

    remind_after: DurationValue | None = None
    escalate_after: DurationValue | None = None
    escalate_to: Annotated[tuple[str | Role, ...], BeforeValidator(_escalate_to)] | None = None
    expire_after: DurationValue | None = None
    on_expiry: OnExpiry | None = None

    @field_validator("on_expiry", mode="before")
    @classmethod
    def _on_expiry(cls, value: Any) -> Any:
        if not isinstance(value, str) or value not in {e.value for e in OnExpiry}:
            raise ValueError(f"must be one of skip, default, keep; got {value!r}")
        return value

    def unknown_role(self, roles: Collection[str]) -> str | None:
        """The first role `escalate_to` names that `roles` does not define, if any."""
        return next(
            (t.name for t in self.escalate_to or () if isinstance(t, Role) and t.name not in roles),
            None,
        )

    def policy(self) -> WaitingPolicy:
        return WaitingPolicy(
            remind_after=self.remind_after,
            escalate_after=self.escalate_after,
            escalate_to=self.escalate_to,
            expire_after=self.expire_after,
            on_expiry=self.on_expiry,
        )


def _roles(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("must be a table of user lists")
    return value


def _users(value: Any) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(u, str) and u.strip() for u in value)
    ):
        raise ValueError("must be a non-empty list of user names")
    return tuple(u.strip() for u in value)


# `[workspaces.NAME.roles]`: role name -> its users, which `escalate_to` may name.
Roles = Annotated[
    dict[str, Annotated[tuple[str, ...], BeforeValidator(_users)]], BeforeValidator(_roles)
]


def unknown_role_message(where: str, role: str, roles: Collection[str], roles_where: str) -> str:
    known = ", ".join(sorted(roles)) or "none"
    return f"{where}.escalate_to: unknown role {role!r}; {roles_where} defines: {known}"


def role_names(roles: WorkspaceRoles) -> frozenset[str]:
    """Every role some workspace defines: an agent profile's policy may name any of them."""
    return frozenset(role for by_name in roles.values() for role in by_name)
