"""Small builders for domain records, so each test states only what it is about."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from clarion.domain.models import (
    AuthorType,
    Bundle,
    Message,
    MessageType,
    Question,
    QuestionOption,
    Session,
    SessionState,
    Turn,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SESSION_ID = "s1"
PENDING_ID = "p1"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def turn(
    turn_id: str,
    *,
    started: float = 0,
    created: float | None = None,
    completed: float | None = None,
    **metadata: Any,
) -> Turn:
    return Turn(
        id=turn_id,
        session_id=SESSION_ID,
        task_id="t1",
        started_at=at(started),
        completed_at=None if completed is None else at(completed),
        metadata=metadata,
        created_at=at(started if created is None else created),
        updated_at=at(started),
    )


def session(state: SessionState = SessionState.WAITING_FOR_INPUT) -> Session:
    return Session(
        id=SESSION_ID,
        task_id="t1",
        agent="builtin",
        state=state,
        is_primary=True,
        created_at=T0,
        updated_at=T0,
    )


def row(
    message_id: str,
    *,
    turn_id: str | None = "turn-1",
    index: int | None = 0,
    question_id: str | None = None,
    created: float = 0,
    updated: float | None = None,
    session_id: str = SESSION_ID,
    type: MessageType = MessageType.CLARIFICATION_REQUEST,
    content: str = "",
    **metadata: Any,
) -> Message:
    """A clarification row; metadata keys given as keywords (status=..., question=...)."""
    meta: dict[str, Any] = {"pending_id": PENDING_ID}
    if index is not None:
        meta["question_index"] = index
    if question_id is not None:
        meta["question_id"] = question_id
    meta.update(metadata)
    return Message(
        id=message_id,
        session_id=session_id,
        task_id="t1",
        turn_id=turn_id,
        author_type=AuthorType.AGENT,
        type=type,
        content=content,
        metadata=meta,
        created_at=at(created),
        updated_at=at(created if updated is None else updated),
    )


def bundle(
    *rows: Message,
    current_turn_id: str | None = "turn-1",
    state: SessionState = SessionState.WAITING_FOR_INPUT,
) -> Bundle:
    return Bundle(
        pending_id=PENDING_ID, session=session(state), rows=rows, current_turn_id=current_turn_id
    )


def question(question_id: str, *options: str | tuple[str, str], prompt: str = "") -> Question:
    """A question whose options are ids (label = id upper-cased) or (id, label) pairs."""
    built = tuple(
        QuestionOption(option_id=o, label=o.upper()) if isinstance(o, str) else QuestionOption(*o)
        for o in options
    )
    return Question(id=question_id, title="", prompt=prompt or f"{question_id}?", options=built)


def question_meta(q: Question) -> Mapping[str, Any]:
    return {
        "id": q.id,
        "title": q.title,
        "prompt": q.prompt,
        "options": [
            {"option_id": o.option_id, "label": o.label, "description": o.description}
            for o in q.options
        ],
    }
