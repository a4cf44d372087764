"""`[agents.NAME.waiting]` and `[workspaces.NAME.waiting]` from the config file.

Imports only the pure domain (the policy and its durations) and `clarion.config_files`. A bad
value raises ValueError naming the file and the key, which `clarion serve` prints on one line
before it exits with status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clarion.config_files import read_config
from clarion.domain.waiting import OnExpiry, WaitingPolicy, parse_duration

_KEYS = ("remind_after", "escalate_after", "escalate_to", "expire_after", "on_expiry")


def waiting_policy(spec: Any, path: Path, where: str) -> WaitingPolicy | None:
    """One `waiting` table (None when absent); `where` names it, e.g. `agents.claude.waiting`."""
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

    escalate_to = spec.get("escalate_to")
    if escalate_to is not None and (
        not isinstance(escalate_to, list)
        or not all(isinstance(u, str) and u.strip() for u in escalate_to)
    ):
        raise ValueError(f"{path}: {where}.escalate_to must be a list of user names")
    on_expiry = spec.get("on_expiry")
    if on_expiry is not None and on_expiry not in {e.value for e in OnExpiry}:
        raise ValueError(
            f"{path}: {where}.on_expiry must be one of skip, default, keep; got {on_expiry!r}"
        )
    return WaitingPolicy(
        remind_after=duration("remind_after"),
        escalate_after=duration("escalate_after"),
        escalate_to=None if escalate_to is None else tuple(u.strip() for u in escalate_to),
        expire_after=duration("expire_after"),
        on_expiry=None if on_expiry is None else OnExpiry(on_expiry),
    )


def load_workspace_policies(config_file: str | None) -> dict[str, WaitingPolicy]:
    """`[workspaces.NAME.waiting]` of every workspace that has one."""
    if not config_file:
        return {}
    path = Path(config_file)
    workspaces = read_config(path).get("workspaces", {})
    if not isinstance(workspaces, dict):
        raise ValueError(f"{path}: [workspaces] must be a table")
    policies: dict[str, WaitingPolicy] = {}
    for name, spec in workspaces.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: [workspaces.{name}] must be a table")
        policy = waiting_policy(spec.get("waiting"), path, f"workspaces.{name}.waiting")
        if policy is not None:
            policies[name] = policy
    return policies
