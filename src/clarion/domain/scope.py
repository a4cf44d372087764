"""Which sessions a recovery acts on.

A server's own startup recovers every session: no agent survived it. A cluster replica that
adopts a dead replica's sessions must recover exactly those and leave the sessions that live
replicas run alone (their questions are live, their turns open for good reason), so every
recovery step takes a scope and acts only on the rows of sessions inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SessionScope:
    """Every session (`session_ids` None), or exactly these."""

    session_ids: frozenset[str] | None = None

    @classmethod
    def only(cls, session_ids: Iterable[str]) -> SessionScope:
        return cls(frozenset(session_ids))

    def covers(self, session_id: str) -> bool:
        return self.session_ids is None or session_id in self.session_ids

    def pick(self, items: Iterable[T], session_of: Callable[[T], str]) -> list[T]:
        """The items whose session is inside the scope, in their order."""
        if self.session_ids is None:
            return list(items)
        return [item for item in items if session_of(item) in self.session_ids]


EVERY_SESSION = SessionScope()
