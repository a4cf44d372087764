"""Startup recovery time with many pending bundles and unpublished reservations.

The database is seeded while no server runs (bench.seed): sessions whose open turn holds ten
pending single-question bundles (as `/scenario ask` leaves them when the process dies), and
sessions whose detached answer was claimed and whose successor turn was reserved (half of
them also marked attempted), as a crash between `resume.after_reserve` and publication leaves
them. The figure is `clarion serve` exec -> first /healthz 200, which includes interpreter
start and imports; the same start on an empty database is reported beside it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from bench.context import progress
from bench.seed import clone_sessions
from bench.server import BenchServer
from clarion.agents.scenario_questions import ask_arguments
from clarion.domain.ids import new_id
from clarion.domain.lifecycle import CLAIM, DETACH
from clarion.domain.models import Answer, ClarificationResponse, SessionState
from clarion.domain.questions import bundle_row_metadata, parse_ask
from clarion.ports import AnswerStore, NewMessage, TurnStore
from clarion.runtime.clock import SystemClock
from clarion.store import open_store

BUNDLES_PER_SESSION = 10
TASKS = 20


def _bundle_rows(session_id: str, turn_id: str) -> tuple[str, list[NewMessage]]:
    questions, context = parse_ask(ask_arguments())
    pending_id = new_id()
    meta = bundle_row_metadata(pending_id, questions, context)
    rows = [
        NewMessage(
            session_id=session_id,
            author_type="agent",
            type="clarification_request",
            content=q.prompt,
            metadata=m,
            turn_id=turn_id,
            requests_input=True,
        )
        for q, m in zip(questions, meta, strict=True)
    ]
    return pending_id, rows


async def _pending_template(turns: TurnStore, store: AnswerStore, task_id: str) -> str:
    session = await turns.create_session(task_id=task_id, agent="builtin", is_primary=False)
    await turns.transition_session(session.id, SessionState.WAITING_FOR_INPUT)
    turn = await turns.create_turn(session.id)
    for _ in range(BUNDLES_PER_SESSION):
        _, rows = _bundle_rows(session.id, turn.id)
        await store.create_bundle(session.id, rows, turn_id=turn.id)
    return session.id


async def _reservation_template(
    turns: TurnStore, store: AnswerStore, task_id: str, *, attempted: bool
) -> str:
    session = await turns.create_session(task_id=task_id, agent="builtin", is_primary=False)
    await turns.transition_session(session.id, SessionState.IDLE)
    turn = await turns.create_turn(session.id)
    pending_id, rows = _bundle_rows(session.id, turn.id)
    await store.create_bundle(session.id, rows, turn_id=turn.id)
    await turns.complete_turn(turn.id)
    await store.transition_session_bundles(session.id, DETACH, pending_id=pending_id)
    now = SystemClock().now() + timedelta(milliseconds=5)
    claim = await store.claim_response(
        ClarificationResponse(
            pending_id=pending_id,
            answers=(Answer(question_id="db", selected_options=("postgres",)),),
            rejected=False,
        ),
        CLAIM,
        now=now,
    )
    if not claim.claimed:
        raise RuntimeError("template claim did not apply")
    successor = await store.reserve_successor(
        session.id,
        source_turn_id=turn.id,
        pending_id=pending_id,
        message_ids=[m.id for m in claim.claimed],
    )
    if attempted:
        await store.mark_attempted(successor.id)
    return session.id


async def seed(url: str, bundles: int, reservations: int) -> None:
    async with open_store(url, SystemClock()) as opened:
        turns, answers = opened.stores.turns, opened.stores.answers
        ws = await turns.ensure_workspace("default")
        tasks = [
            (await turns.create_task(title=f"recovery {i}", description="", workspace_id=ws.id)).id
            for i in range(TASKS)
        ]
        pending = await _pending_template(turns, answers, tasks[0])
        plain = await _reservation_template(turns, answers, tasks[0], attempted=False)
        tried = await _reservation_template(turns, answers, tasks[0], attempted=True)
    pending_copies = max(0, bundles // BUNDLES_PER_SESSION - 1)
    await clone_sessions(url, [pending], pending_copies, tasks)
    await clone_sessions(url, [plain, tried], max(0, reservations // 2 - 1), tasks)


@dataclass(frozen=True)
class RecoveryResult:
    empty_s: float
    loaded_s: float | None  # None: not ready within the time limit
    limit_s: float
    detached_at_limit: int = 0


async def run(
    db: str,
    empty: BenchServer,
    seeded: BenchServer,
    bundles: int,
    reservations: int,
    limit_s: float,
) -> RecoveryResult:
    baseline = await empty.start()
    empty.stop()
    began = time.perf_counter()
    await seed(seeded.database_url, bundles, reservations)
    progress(
        f"{db}: recovery, seeded {bundles} bundles and {reservations} reservations "
        f"in {time.perf_counter() - began:.1f}s; starting (limit {limit_s:g}s)"
    )
    exec_at = seeded.spawn()
    try:
        loaded: float | None = await seeded.wait_ready(limit=limit_s) - exec_at
        detached = 0
    except TimeoutError:
        loaded = None
        seeded.stop()
        detached = await detached_so_far(seeded.database_url)
    seeded.stop()
    return RecoveryResult(baseline, loaded, limit_s, detached)


async def detached_so_far(url: str) -> int:
    """Bundle rows already marked agent_disconnected (progress of a recovery cut short)."""
    from sqlalchemy import func, select

    from clarion.store.db.engine import open_engine
    from clarion.store.db.schema import task_session_messages as messages

    engine = open_engine(url)
    try:
        async with engine.connect() as conn:
            query = select(func.count()).where(
                messages.c.type == "clarification_request",
                messages.c.metadata.like('%"agent_disconnected":true%'),
            )
            return int((await conn.execute(query)).scalar() or 0)
    finally:
        await engine.dispose()
