"""`[agents.NAME.permissions]` from the config file: the ACP tool kinds a profile allows or
rejects without asking. Imports only the pure domain (the list of tool kinds) and the
configuration models."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BeforeValidator, model_validator

from clarion.config.spec import Spec
from clarion.domain.permissions import TOOL_KINDS


def _kinds(value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ValueError("must be a list of tool kinds")
    unknown = sorted(set(value) - set(TOOL_KINDS))
    if unknown:
        raise ValueError(
            f": unknown tool kind(s) {', '.join(unknown)}; known: {', '.join(sorted(TOOL_KINDS))}"
        )
    return frozenset(value)


ToolKinds = Annotated[frozenset[str], BeforeValidator(_kinds)]


class PermissionsSpec(Spec):
    """`allow = [...]`, `reject = [...]`: tool kinds, none in both."""

    table_says = "must be a table"

    allow: ToolKinds = frozenset()
    reject: ToolKinds = frozenset()

    @model_validator(mode="after")
    def _not_both(self) -> Self:
        if self.allow & self.reject:
            both = ", ".join(sorted(self.allow & self.reject))
            raise ValueError(f": {both} both allowed and rejected")
        return self
