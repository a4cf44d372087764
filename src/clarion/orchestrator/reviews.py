"""A person's review of a task's changes, sent to the agent as one new turn.

The review goes to the task's primary session through the detached answer's resume path
(orchestrator/resume.py): reserve a turn, start the agent if it is stopped, write the attempt
marker once it is ready, hand the prompt over within the acceptance limit, publish. So it is
dispatched at most once, answered 200 only once the agent accepted it, rolled back (and may be
sent again) when the agent did not, and a restart at any point never sends it twice.

It is refused with `session_busy`, nothing written, while the session has a turn running or
being handed over, a prompt queued, a question or a permission request waiting: a review
answers finished work, and the agent's attention belongs to what it is doing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from clarion.domain.errors import (
    AcceptedButUnfinalized,
    AcceptedButUnpublished,
    Conflict,
    InvalidInput,
    NotFound,
    ResumeNotAccepted,
    RetryableFailure,
    SessionBusy,
)
from clarion.domain.ids import new_id
from clarion.domain.models import AuthorType, MessageType, Session, Task, WorktreeState
from clarion.domain.reviews import (
    ReviewComment,
    review_claim_key,
    review_prompt,
    worktree_relative,
)
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.resume import DetachedResume, Dispatch
from clarion.ports import NewMessage
from clarion.ports.store.reviews import ReviewStore
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import bounded

log = logging.getLogger(__name__)


class ReviewService:
    def __init__(
        self,
        *,
        store: ReviewStore,
        resume: DetachedResume,
        publisher: EventPublisher,
        lanes: Lanes,
        permission_pending: Callable[[str], bool],
        persist_s: float,
    ) -> None:
        self._store = store
        self._resume = resume
        self._publisher = publisher
        self._lanes = lanes
        self._permission_pending = permission_pending
        self._persist_s = persist_s
        # Sessions a review is being sent to: a second review arriving meanwhile is busy at
        # once (checked and added with no await between), rather than waiting for the lane
        # and finding the first one's turn already over.
        self._sending: set[str] = set()

    async def review(
        self, task_id: str, comments: Sequence[tuple[str, int | None, str]], summary: str | None
    ) -> str:
        """Send the review; returns the id of the turn the agent accepted it in."""
        task = await self._store.get_task(task_id)
        worktree = _worktree_of(task)
        checked = [
            ReviewComment(
                path=worktree_relative(path, worktree, field=f"comments[{index}].path"),
                line=line,
                body=body,
            )
            for index, (path, line, body) in enumerate(comments)
        ]
        if not checked and (summary is None or not summary.strip()):
            raise InvalidInput("a review needs at least one comment or a summary", field="comments")
        session = await self._primary(task_id)
        if session.id in self._sending:
            raise SessionBusy("a review is being sent to the session", session_id=session.id)
        self._sending.add(session.id)
        try:
            await self._refuse_busy(session)
            return await self._send(session, checked, summary)
        finally:
            self._sending.discard(session.id)

    async def _send(
        self, session: Session, checked: list[ReviewComment], summary: str | None
    ) -> str:
        task_id = session.task_id
        prompt = review_prompt(checked, summary)
        key_turn = new_id()
        key = review_claim_key(key_turn)
        ids = {"task_id": task_id, "session_id": session.id, "turn_id": key_turn}
        lane = self._lanes.get(session.id)
        async with lane.admission:
            if lane.blocked_reason is not None:
                raise Conflict(
                    "prompt admission is blocked until restart recovery: " + lane.blocked_reason,
                    session_id=session.id,
                )
            if lane.running_generation is not None or lane.queue:
                raise SessionBusy("the session has a turn running", session_id=session.id)
            turn = await bounded(
                self._store.reserve_review(session.id, turn_id=key_turn), self._persist_s
            )
            log.info("review reserved", extra={**ids, "comments": len(checked)})
            dispatch = Dispatch(
                session=session, pending_id=key, message_ids=(key,), ids=ids, recap_last=True
            )
            try:
                turn = await self._resume.dispatch_reserved(lane, dispatch, turn, prompt)
            except ResumeNotAccepted as exc:
                raise RetryableFailure(
                    "the agent did not accept the review; nothing was sent, it may be sent again",
                    code="review_not_accepted",
                    **ids,
                ) from exc
            except AcceptedButUnpublished as exc:
                raise AcceptedButUnfinalized(
                    "the agent accepted the review, but its turn could not be recorded as "
                    "published; do not send it again",
                    **ids,
                ) from exc
        log.info("review accepted by the agent", extra=ids)
        await self._record(session, turn.id, prompt)
        return turn.id

    async def _primary(self, task_id: str) -> Session:
        sessions = await self._store.list_sessions(task_id)
        primary = next((s for s in sessions if s.is_primary), sessions[0] if sessions else None)
        if primary is None:
            raise NotFound("the task has no session to send the review to", task_id=task_id)
        if primary.state.is_terminal:
            raise Conflict("the task's primary session has ended", session_id=primary.id)
        return primary

    async def _refuse_busy(self, session: Session) -> None:
        lane = self._lanes.get(session.id)
        if lane.admission.locked() or lane.running_generation is not None or lane.queue:
            raise SessionBusy("the session has a turn running", session_id=session.id)
        if self._permission_pending(session.id):
            raise SessionBusy("a permission request is waiting", session_id=session.id)
        if session.id in await self._store.sessions_with_active_clarification(session.task_id):
            raise SessionBusy("a question is waiting for an answer", session_id=session.id)

    async def _record(self, session: Session, turn_id: str, prompt: str) -> None:
        """The review in the transcript, as the person's words (after the agent has it)."""
        try:
            message = await self._store.add_message(
                NewMessage(
                    session_id=session.id,
                    author_type=AuthorType.USER,
                    type=MessageType.MESSAGE,
                    content=prompt,
                    metadata={"review": True},
                    turn_id=turn_id,
                )
            )
        except Exception:
            log.exception(
                "review accepted but not written to the transcript",
                extra={"session_id": session.id, "turn_id": turn_id},
            )
            return
        await self._publisher.message("added", message)


def _worktree_of(task: Task) -> str:
    worktree = task.worktree
    if worktree is None or worktree.state is WorktreeState.REMOVED:
        raise NotFound("the task has no worktree to review", task_id=task.id)
    return worktree.path
