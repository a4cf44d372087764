"""Users, memberships and API tokens (AccessStore)."""

from __future__ import annotations

from typing import Protocol

from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    TokenOwner,
)


class AccessStore(Lookups, Protocol):
    """Access control: API tokens and their owners."""

    async def issue_api_token(self, *, user: str, workspace: str, token_hash: str) -> TokenOwner:
        """Create the user and the workspace if missing, make the user a member (once), and
        store `token_hash` (the token itself is never stored). One transaction."""
        ...

    async def find_token_owner(self, token_hash: str) -> TokenOwner | None:
        """The owner of the token with this hash, with current memberships; None if unknown."""
        ...

    async def escalated_users(self, pending_id: str) -> tuple[str, ...]:
        """The users a waiting policy escalated this question to (() if not escalated): they
        may see and answer that one question."""
        ...
