"""`[agents.NAME.permissions]` from the config file: the ACP tool kinds a profile allows or
rejects without asking. Imports only the pure domain (the list of tool kinds)."""

from __future__ import annotations

from typing import Any

from clarion.domain.permissions import TOOL_KINDS


def permission_rules(spec: Any, where: str) -> tuple[frozenset[str], frozenset[str]]:
    """`allow = [...]`, `reject = [...]` of `[agents.NAME.permissions]`, kinds checked."""
    if not isinstance(spec, dict):
        raise ValueError(f"{where}.permissions must be a table")
    rules: list[frozenset[str]] = []
    for key in ("allow", "reject"):
        kinds = spec.get(key, [])
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise ValueError(f"{where}.permissions.{key} must be a list of tool kinds")
        unknown = sorted(set(kinds) - set(TOOL_KINDS))
        if unknown:
            raise ValueError(
                f"{where}.permissions.{key}: unknown tool kind(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(TOOL_KINDS))}"
            )
        rules.append(frozenset(kinds))
    unknown_keys = sorted(set(spec) - {"allow", "reject"})
    if unknown_keys:
        raise ValueError(f"{where}.permissions: unknown key(s) {', '.join(unknown_keys)}")
    if rules[0] & rules[1]:
        both = ", ".join(sorted(rules[0] & rules[1]))
        raise ValueError(f"{where}.permissions: {both} both allowed and rejected")
    return rules[0], rules[1]
