"""Who may see what: API tokens, callers, and visibility through a task's workspace.

Imported by the composition root, the HTTP and WebSocket edges and the `clarion token`
command; depends on the AccessStore port only. With access control off every caller is `EVERYONE`
and no check touches the database, so the open server behaves exactly as before.

Visibility always goes through the task: a session, message, turn or bundle is visible when
its task's workspace is one the caller belongs to. Anything invisible raises the same NotFound
(same message) as a missing thing, so existence never leaks. Tasks never change workspace and
sessions and bundles never change task, so those lookups are cached in memory; misses are not
cached.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass

from clarion.domain.errors import NotFound, Unauthenticated
from clarion.domain.models import Workspace
from clarion.ports import AccessStore

log = logging.getLogger(__name__)

_MAX_TOKEN_CHARS = 512  # far above a real token; bounds the work an anonymous caller causes
_MAX_CACHED = 200_000  # ids are ~36 characters: a few tens of MB at worst, then start over


def new_api_token() -> str:
    """A fresh random API token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the database stores and looks tokens up by: SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller. `workspaces` None means: sees everything (access control off)."""

    user: str | None
    workspaces: tuple[Workspace, ...] | None

    @property
    def sees_all(self) -> bool:
        return self.workspaces is None

    def workspace_ids(self) -> list[str] | None:
        """For list queries: None (no filter) or the ids of the caller's workspaces."""
        return None if self.workspaces is None else [w.id for w in self.workspaces]

    def belongs_to(self, workspace_id: str) -> bool:
        return self.workspaces is None or any(w.id == workspace_id for w in self.workspaces)


EVERYONE = Caller(user=None, workspaces=None)


class AccessControl:
    def __init__(self, store: AccessStore, *, enabled: bool) -> None:
        self._store = store
        self._enabled = enabled
        self._task_workspace: dict[str, str] = {}
        self._session_task: dict[str, str] = {}
        self._bundle_task: dict[str, str] = {}

    @property
    def enabled(self) -> bool:
        return self._enabled

    async def authenticate(self, token: str | None) -> Caller:
        """The caller a token stands for; Unauthenticated if it is missing or unknown."""
        if not self._enabled:
            return EVERYONE
        if not token:
            raise Unauthenticated("missing API token")
        if len(token) > _MAX_TOKEN_CHARS:
            raise Unauthenticated("unknown API token")
        owner = await self._store.find_token_owner(hash_token(token))
        if owner is None:
            raise Unauthenticated("unknown API token")
        return Caller(user=owner.user_name, workspaces=owner.workspaces)

    def workspace_for_new_task(self, caller: Caller, requested: str | None) -> str | None:
        """The workspace name a new task goes to; NotFound for one the caller is not in."""
        if caller.workspaces is None:
            return requested
        if requested is None:
            if not caller.workspaces:
                raise NotFound("workspace not found")
            return caller.workspaces[0].name
        if not any(w.name == requested for w in caller.workspaces):
            raise NotFound("workspace not found", workspace=requested)
        return requested

    # ---------------------------------------------------------------- visibility checks

    async def require_task(self, caller: Caller, task_id: str) -> None:
        if caller.sees_all:
            return
        if not caller.belongs_to(await self._workspace_of_task(task_id)):
            raise NotFound("task not found", task_id=task_id)

    async def require_session(self, caller: Caller, session_id: str) -> None:
        if caller.sees_all:
            return
        task_id = self._session_task.get(session_id)
        if task_id is None:
            task_id = (await self._store.get_session(session_id)).task_id
            self._remember(self._session_task, session_id, task_id)
        if not caller.belongs_to(await self._workspace_of_task(task_id)):
            raise NotFound("session not found", session_id=session_id)

    async def require_bundle(
        self, caller: Caller, pending_id: str, *, escalated: bool = False
    ) -> None:
        """With `escalated`, a user the question was escalated to passes too (seeing and
        answering it; nothing else about its task or session)."""
        if caller.sees_all:
            return
        task_id = self._bundle_task.get(pending_id)
        if task_id is None:
            bundle = await self._store.find_bundle(pending_id)
            if bundle is None:
                raise NotFound("clarification request not found", pending_id=pending_id)
            task_id = bundle.session.task_id
            self._remember(self._bundle_task, pending_id, task_id)
        if caller.belongs_to(await self._workspace_of_task(task_id)):
            return
        # A question escalated to this user by its waiting policy: that one question only.
        if not escalated or not await self.escalated_to(caller, pending_id):
            raise NotFound("clarification request not found", pending_id=pending_id)

    async def escalated_to(self, caller: Caller, pending_id: str) -> bool:
        """Whether a waiting policy escalated this question to the caller (who may then see
        and answer it, and receive its events, whatever its workspace)."""
        return caller.user is not None and caller.user in await self._store.escalated_users(
            pending_id
        )

    async def sees_task(self, caller: Caller, task_id: str) -> bool:
        """For notifications: whether an event of this task may reach the caller."""
        if caller.sees_all:
            return True
        try:
            return caller.belongs_to(await self._workspace_of_task(task_id))
        except NotFound:
            return False

    async def _workspace_of_task(self, task_id: str) -> str:
        workspace_id = self._task_workspace.get(task_id)
        if workspace_id is None:
            workspace_id = (await self._store.get_task(task_id)).workspace_id
            self._remember(self._task_workspace, task_id, workspace_id)
        return workspace_id

    @staticmethod
    def _remember(cache: dict[str, str], key: str, value: str) -> None:
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[key] = value
