"""Agent failures a person can see: a failed start, an errored prompt, a process that exits.

Each writes one `error` transcript row (author system; one readable sentence, then at most the
last 2,000 characters of the agent's stderr; `metadata.phase` start|prompt|process) and the
session's `error` field, in one commit, then publishes both. A failed start or an exit ends the
session (FAILED); an errored prompt whose agent still runs leaves it usable.
"""

from __future__ import annotations

import logging
from typing import Any

from clarion.domain.models import AuthorType, MessageType, Session, SessionState
from clarion.ports import NewMessage, PermissionStore
from clarion.ports.metrics import NO_METRICS, Metrics
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

STDERR_CHARS = 2000


def sentence(text: str) -> str:
    """`text` as one sentence: capitalized, one line, ending with a full stop."""
    line = " ".join(text.split())
    if not line:
        return "The agent failed."
    line = line[0].upper() + line[1:]
    return line if line.endswith((".", "!", "?")) else line + "."


def error_content(reason: str, stderr: str) -> str:
    tail = stderr.strip()[-STDERR_CHARS:]
    return reason if not tail else f"{reason}\n\nAgent stderr:\n{tail}"


class AgentFailures:
    def __init__(
        self, *, store: PermissionStore, publisher: EventPublisher, metrics: Metrics = NO_METRICS
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._metrics = metrics

    async def start_failed(self, session: Session, exc: BaseException) -> Session:
        """The agent could not be started: the session is FAILED and says why."""
        reason = sentence(getattr(exc, "message", None) or str(exc) or type(exc).__name__)
        return await self._record(
            session.id,
            reason,
            stderr=str(getattr(exc, "stderr", "") or ""),
            metadata={"phase": "start", "exit_code": getattr(exc, "exit_code", None)},
            state=SessionState.FAILED,
            own_turn=True,
        )

    async def prompt_failed(
        self, session_id: str, turn_id: str, *, error: str, stop_reason: str, stderr: str
    ) -> Session:
        """The agent answered a prompt with an error but still runs: the session stays usable."""
        reason = sentence(f"The agent's prompt failed: {error}")
        return await self._record(
            session_id,
            reason,
            stderr=stderr,
            metadata={"phase": "prompt", "stop_reason": stop_reason},
            turn_id=turn_id,
        )

    async def process_exited(
        self, session_id: str, *, agent: str, exit_code: int | None, stderr: str
    ) -> Session:
        """The agent process exited on its own: the session is FAILED and says why."""
        how = "" if exit_code is None else f" with code {exit_code}"
        reason = sentence(f"Agent {agent!r} exited unexpectedly{how}")
        return await self._record(
            session_id,
            reason,
            stderr=stderr,
            metadata={"phase": "process", "exit_code": exit_code},
            state=SessionState.FAILED,
            own_turn=True,
        )

    async def _record(
        self,
        session_id: str,
        reason: str,
        *,
        stderr: str,
        metadata: dict[str, Any],
        state: SessionState | None = None,
        turn_id: str | None = None,
        own_turn: bool = False,
    ) -> Session:
        meta = {k: v for k, v in metadata.items() if v is not None}
        message, session, turn = await self._store.record_agent_failure(
            NewMessage(
                session_id=session_id,
                author_type=AuthorType.SYSTEM,
                type=MessageType.ERROR,
                content=error_content(reason, stderr),
                metadata=meta,
                turn_id=turn_id,
            ),
            error=reason,
            session_state=state,
            turn_metadata={"error": reason, **meta} if own_turn else None,
        )
        self._metrics.agent_failed()
        log.warning(
            "agent failure: %s",
            reason,
            extra={"session_id": session_id, "message_id": message.id, **meta},
        )
        if turn is not None:
            await self._publisher.turn_quietly("started", turn)
            await self._publisher.turn_quietly("completed", turn)
        await self._publisher.message("added", message)
        await self._publisher.session_state(session)
        return session
