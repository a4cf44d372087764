"""A clarification bundle's operational state, its questions and its winning response.

Pure; the respond service, projections and the HTTP edge import it. The state derives from
durable rows, the session's current turn and whether this process holds a live waiter:

1. session terminal                                   -> terminal
2. the bundle does not belong to the current turn     -> superseded_history if any row still
   (no durable current turn, or some row in another      carries pending evidence (`pending`
   turn or session) and a row is still pending           or a missing status), else as below
3. some row carries `response_delivery_pending`       -> delivery_claimed
4. some current-turn row is pending                   -> active_live with a waiter, else
                                                         active_detached
5. otherwise (every row terminal)                     -> terminal

`agent_disconnected=true` records active_detached durably, but a pending current-turn row with
no waiter is active_detached even without the flag (a crash before the detach was written):
answering it takes the detached path, and startup detaches it.

A missing or empty status reads as pending only in the current turn; in an older turn it is
superseded history. A status Clarion does not know (or `responding`, which exists only inside a
claim transaction) is not actionable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from clarion.domain.answers import response_wire
from clarion.domain.flags import flag
from clarion.domain.models import (
    Answer,
    Bundle,
    BundleState,
    ClarificationResponse,
    ClarificationStatus,
    Message,
    MessageType,
    MetaKey,
    Question,
    QuestionOption,
    Receipt,
)
from clarion.domain.waiting import ANSWERED_BY_PERSON, ANSWERED_BY_POLICY

_STATUSES = {s.value: s for s in ClarificationStatus}


def _raw_status(message: Message) -> object:
    return message.metadata.get(MetaKey.STATUS)


def _has_pending_evidence(message: Message) -> bool:
    """Recorded as pending, or carrying no status at all (the legacy spelling of pending)."""
    raw = _raw_status(message)
    return raw is None or raw == "" or raw == ClarificationStatus.PENDING.value


def row_status(message: Message, current_turn_id: str | None) -> ClarificationStatus | None:
    """The row's status as recorded. A missing or empty status is PENDING only when the row
    is in the current turn; elsewhere it is superseded history and reads as None, as does a
    status Clarion does not know. PENDING alone does not make a row answerable: see
    `is_actionable`."""
    raw = _raw_status(message)
    if raw is None or raw == "":
        in_current = current_turn_id is not None and message.turn_id == current_turn_id
        return ClarificationStatus.PENDING if in_current else None
    if isinstance(raw, str):
        return _STATUSES.get(raw)
    return None


def is_actionable(message: Message, current_turn_id: str | None) -> bool:
    """A pending row in the current turn: what a response may claim."""
    return (
        current_turn_id is not None
        and message.turn_id == current_turn_id
        and row_status(message, current_turn_id) is ClarificationStatus.PENDING
    )


def _owned_by_current_turn(bundle: Bundle) -> bool:
    """Every row is a clarification row of the bundle's session in its current turn. A bundle
    spread over turns or sessions is malformed and never claimable."""
    current = bundle.current_turn_id
    return current is not None and all(
        row.turn_id == current
        and row.session_id == bundle.session.id
        and row.type == MessageType.CLARIFICATION_REQUEST
        for row in bundle.rows
    )


def bundle_state(bundle: Bundle, *, has_live_waiter: bool) -> BundleState:
    """The bundle's operational state (see the module docstring for the rule)."""
    if bundle.session.state.is_terminal:
        return BundleState.TERMINAL
    owned = _owned_by_current_turn(bundle)
    if not owned and any(_has_pending_evidence(row) for row in bundle.rows):
        return BundleState.SUPERSEDED_HISTORY
    if any(flag(row.metadata, MetaKey.RESPONSE_DELIVERY_PENDING) for row in bundle.rows):
        return BundleState.DELIVERY_CLAIMED
    if owned and any(is_actionable(row, bundle.current_turn_id) for row in bundle.rows):
        return BundleState.ACTIVE_LIVE if has_live_waiter else BundleState.ACTIVE_DETACHED
    return BundleState.TERMINAL


def receipt_of(bundle: Bundle) -> Receipt | None:
    """How the bundle's response reached the agent, as its rows record it. Ambiguous wins
    until a resend settles it: one ambiguous row means the answer may be missing."""
    recorded = {row.metadata.get(MetaKey.DELIVERY) for row in bundle.rows}
    if Receipt.AMBIGUOUS.value in recorded:
        return Receipt.AMBIGUOUS
    if Receipt.DELIVERED.value in recorded:
        return Receipt.DELIVERED
    return None


def resend_in_flight(bundle: Bundle) -> bool:
    return any(flag(row.metadata, MetaKey.RESEND_PENDING) for row in bundle.rows)


# --------------------------------------------------------------------------- questions


def _question_index(meta: Mapping[str, Any]) -> int:
    value = meta.get(MetaKey.QUESTION_INDEX)
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def ordered_rows(bundle: Bundle) -> tuple[Message, ...]:
    """Rows by question_index, created_at, id; a missing index reads as 0."""
    return tuple(sorted(bundle.rows, key=_row_order))


def _row_order(m: Message) -> tuple[int, datetime, str]:
    return (_question_index(m.metadata), m.created_at, m.id)


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def question_of(message: Message) -> Question:
    """The question a row carries. Malformed metadata degrades to what can be read: an id
    from `question_id` or `question.id`, the row content as prompt, and only options that
    are objects."""
    meta = message.metadata
    data = meta.get(MetaKey.QUESTION)
    if not isinstance(data, Mapping):
        data = {}
    raw_options = data.get("options")
    options = tuple(
        QuestionOption(
            option_id=_str(o, "option_id"),
            label=_str(o, "label"),
            description=_str(o, "description"),
            default=o.get("default") is True,
        )
        for o in (raw_options if isinstance(raw_options, list) else ())
        if isinstance(o, Mapping)
    )
    return Question(
        id=_str(meta, MetaKey.QUESTION_ID) or _str(data, "id"),
        title=_str(data, "title"),
        prompt=_str(data, "prompt") or message.content,
        options=options,
    )


def questions_of(bundle: Bundle) -> tuple[Question, ...]:
    """The bundle's questions in question order."""
    return questions_of_rows(bundle.rows)


def questions_of_rows(rows: Iterable[Message]) -> tuple[Question, ...]:
    """The questions a bundle's rows carry, in question order."""
    return tuple(question_of(row) for row in sorted(rows, key=_row_order))


def context_of(bundle: Bundle) -> str:
    """The context text shared by the bundle's rows ("" when none)."""
    for row in ordered_rows(bundle):
        context = _str(row.metadata, MetaKey.CONTEXT)
        if context:
            return context
    return ""


def context_on(row: Message) -> Any:
    """The context one row records, as stored ("" when none)."""
    return row.metadata.get(MetaKey.CONTEXT, "") or ""


def lost_to_cancellation(bundle: Bundle) -> bool:
    """A cancellation, and no response, settled the bundle's rows: what a responder that
    loaded the bundle before the cancellation won reads as "not found"."""
    statuses = {row.metadata.get(MetaKey.STATUS) for row in bundle.rows}
    return ClarificationStatus.CANCELLED in statuses and not statuses & {
        ClarificationStatus.ANSWERED,
        ClarificationStatus.REJECTED,
    }


# --------------------------------------------------------------------------- winner


def _latest(rows: list[Message]) -> datetime:
    return max(row.updated_at for row in rows)


def _row_answer(row: Message, question: Question) -> Answer:
    data = row.metadata.get(MetaKey.RESPONSE)
    if not isinstance(data, Mapping):
        return Answer(question_id=question.id)
    selected = data.get("selected_options")
    return Answer(
        question_id=_str(data, "question_id") or question.id,
        selected_options=tuple(
            s for s in (selected if isinstance(selected, list) else ()) if isinstance(s, str)
        ),
        custom_text=_str(data, "custom_text"),
    )


def stored_response(bundle: Bundle) -> ClarificationResponse | None:
    """The response an earlier responder won with, read back from the rows, or None.

    Answered rows make an answered response (their answers in question order); otherwise
    rejected rows make a rejection carrying the stored reason. `responded_at` is the latest
    such row's `updated_at`, which confirmation leaves at the claim time.
    """
    rows = ordered_rows(bundle)
    answered = [r for r in rows if _raw_status(r) == ClarificationStatus.ANSWERED.value]
    if answered:
        return ClarificationResponse(
            pending_id=bundle.pending_id,
            answers=tuple(_row_answer(r, question_of(r)) for r in answered),
            rejected=False,
            reject_reason="",
            responded_at=_latest(answered),
        )
    rejected = [r for r in rows if _raw_status(r) == ClarificationStatus.REJECTED.value]
    if rejected:
        return ClarificationResponse(
            pending_id=bundle.pending_id,
            answers=(),
            rejected=True,
            reject_reason=next(
                (
                    _str(r.metadata, MetaKey.REJECT_REASON)
                    for r in rejected
                    if _str(r.metadata, MetaKey.REJECT_REASON)
                ),
                "",
            ),
            responded_at=_latest(rejected),
        )
    return None


def winning_response(bundle: Bundle) -> dict[str, Any] | None:
    """`stored_response` in the wire shape of the respond API, or None."""
    response = stored_response(bundle)
    return response_wire(response) if response is not None else None


def answered_by(bundle: Bundle) -> str | None:
    """`policy` when the waiting policy's expiry answered the bundle, the person's user name
    when the answer named them (a mapped Slack user), `person` when someone else did, None
    while nobody has."""
    if stored_response(bundle) is None:
        return None
    named = {row.metadata.get(MetaKey.ANSWERED_BY) for row in bundle.rows}
    if ANSWERED_BY_POLICY in named:
        return ANSWERED_BY_POLICY
    person = next((n for n in named if isinstance(n, str) and n), None)
    return person or ANSWERED_BY_PERSON


def asked_under_policy(bundle: Bundle) -> bool:
    """Asked under a waiting policy that can fire: its deadlines are stored beside it."""
    return any(flag(row.metadata, MetaKey.WAITING) for row in bundle.rows)


def policy_question_id(metadata: Mapping[str, Any]) -> str | None:
    """The pending id of a row's metadata when the row belongs to a question asked under a
    waiting policy (the only kind a policy can escalate); None otherwise."""
    pending_id = metadata.get(MetaKey.PENDING_ID)
    if not flag(metadata, MetaKey.WAITING) or not isinstance(pending_id, str):
        return None
    return pending_id
