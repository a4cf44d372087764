"""`[agents.NAME.waiting]`, `[workspaces.NAME.waiting]` and `[workspaces.NAME.roles]` from the
config file.

Imports only the pure domain (the policy and its durations) and `clarion.config.files`. A bad
value raises ValueError naming the file and the key, which `clarion serve` prints on one line
before it exits with status 2.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from clarion.config.files import read_config
from clarion.domain.waiting import OnExpiry, Role, WaitingPolicy, parse_duration

_KEYS = ("remind_after", "escalate_after", "escalate_to", "expire_after", "on_expiry")

# `"role:NAME"` in `escalate_to` names a role, as `{ role = "NAME" }` does: a user whose name
# starts with it is reached through a role.
ROLE_PREFIX = "role:"

# workspace name -> role name -> its users
WorkspaceRoles = Mapping[str, Mapping[str, tuple[str, ...]]]


def _escalate_to(
    raw: Any, path: Path, where: str, roles: Collection[str], roles_where: str
) -> tuple[str | Role, ...] | None:
    """User names, `"role:NAME"` strings and `{ role = "NAME" }` tables; each role must be one
    `roles` defines."""
    if raw is None:
        return None
    shape = (
        f"{path}: {where}.escalate_to must be a list of user names,"
        f' "role:NAME" and {{ role = "NAME" }}'
    )
    if not isinstance(raw, list):
        raise ValueError(shape)
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
            raise ValueError(shape)
        if name.strip() not in roles:
            known = ", ".join(sorted(roles)) or "none"
            raise ValueError(
                f"{path}: {where}.escalate_to: unknown role {name.strip()!r};"
                f" {roles_where} defines: {known}"
            )
        targets.append(Role(name.strip()))
    return tuple(targets)


def waiting_policy(
    spec: Any,
    path: Path,
    where: str,
    roles: Collection[str] = (),
    roles_where: str = "[workspaces.*.roles]",
) -> WaitingPolicy | None:
    """One `waiting` table (None when absent); `where` names it, e.g. `agents.claude.waiting`.
    `roles` are the role names its `escalate_to` may use, `roles_where` says whose they are."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: {where} must be a table")
    unknown = sorted(set(spec) - set(_KEYS))
    if unknown:
        raise ValueError(f"{path}: {where}.{unknown[0]}: unknown key; known: {', '.join(_KEYS)}")

    def duration(key: str) -> Any:
        if key not in spec:
            return None
        try:
            return parse_duration(spec[key])
        except ValueError as exc:
            raise ValueError(f"{path}: {where}.{key} {exc}") from None

    escalate_to = _escalate_to(spec.get("escalate_to"), path, where, roles, roles_where)
    on_expiry = spec.get("on_expiry")
    if on_expiry is not None and on_expiry not in {e.value for e in OnExpiry}:
        raise ValueError(
            f"{path}: {where}.on_expiry must be one of skip, default, keep; got {on_expiry!r}"
        )
    return WaitingPolicy(
        remind_after=duration("remind_after"),
        escalate_after=duration("escalate_after"),
        escalate_to=escalate_to,
        expire_after=duration("expire_after"),
        on_expiry=None if on_expiry is None else OnExpiry(on_expiry),
    )


def _workspaces(path: Path) -> dict[str, dict[str, Any]]:
    workspaces = read_config(path).get("workspaces", {})
    if not isinstance(workspaces, dict):
        raise ValueError(f"{path}: [workspaces] must be a table")
    for name, spec in workspaces.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: [workspaces.{name}] must be a table")
    return workspaces


def load_workspace_roles(config_file: str | None) -> dict[str, dict[str, tuple[str, ...]]]:
    """`[workspaces.NAME.roles]`: each role a non-empty list of user names."""
    if not config_file:
        return {}
    path = Path(config_file)
    found: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, spec in _workspaces(path).items():
        roles = spec.get("roles")
        if roles is None:
            continue
        if not isinstance(roles, dict):
            raise ValueError(f"{path}: workspaces.{name}.roles must be a table of user lists")
        for role, users in roles.items():
            if (
                not isinstance(users, list)
                or not users
                or not all(isinstance(u, str) and u.strip() for u in users)
            ):
                raise ValueError(
                    f"{path}: workspaces.{name}.roles.{role} must be a non-empty list of user names"
                )
        found[name] = {role: tuple(u.strip() for u in users) for role, users in roles.items()}
    return found


def role_names(roles: WorkspaceRoles) -> frozenset[str]:
    """Every role some workspace defines: an agent profile's policy may name any of them."""
    return frozenset(role for by_name in roles.values() for role in by_name)


def load_workspace_policies(config_file: str | None) -> dict[str, WaitingPolicy]:
    """`[workspaces.NAME.waiting]` of every workspace that has one."""
    if not config_file:
        return {}
    path = Path(config_file)
    roles = load_workspace_roles(config_file)
    policies: dict[str, WaitingPolicy] = {}
    for name, spec in _workspaces(path).items():
        where = f"workspaces.{name}"
        policy = waiting_policy(
            spec.get("waiting"), path, f"{where}.waiting", roles.get(name, {}), f"{where}.roles"
        )
        if policy is not None:
            policies[name] = policy
    return policies
