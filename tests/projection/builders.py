"""Service-level builders for the projection suite: the read-side services on a real store and
the in-memory bus, a small world builder, store wrappers that delay or fail, and a model of the
web client's revision rule (src/clarion/web/js/store.js)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clarion.bus import MemoryBus
from clarion.domain.ids import new_id
from clarion.domain.lifecycle import CLAIM, RETIRE_INTENT
from clarion.domain.models import (
    Answer,
    ClarificationResponse,
    Message,
    MessageType,
    Session,
    SessionState,
    Task,
    Turn,
)
from clarion.orchestrator.workflow import WorkflowGuard
from clarion.ports import Event, NewMessage
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector
from clarion.projection.reads import Reads, RunningLook
from clarion.projection.summaries import SummaryService
from clarion.projection.waiter_lookup import LiveWaitersOf, local_only
from clarion.runtime.clock import ManualClock
from clarion.store import Stores
from tests.whole_store import WholeStore, per_port


class TapBus(MemoryBus):
    """The in-memory bus, recording what was published; `fail_types` refuse publication."""

    def __init__(self) -> None:
        super().__init__()
        self.published: list[Event] = []
        self.fail_types: set[str] = set()

    async def publish(self, event: Event) -> None:
        if event.type in self.fail_types:
            raise ConnectionError(f"bus refused {event.type}")
        self.published.append(event)
        await super().publish(event)

    def of(self, type_: str) -> list[Event]:
        return [e for e in self.published if e.type == type_]

    def messages_of(self, session_id: str) -> list[Event]:
        return [
            e
            for e in self.published
            if e.type.startswith("session.message.") and e.session_id == session_id
        ]


@dataclass(eq=False)
class Projections:
    """The read side wired as wiring.build wires it."""

    store: WholeStore
    bus: TapBus
    projector: PendingProjector
    summaries: SummaryService
    publisher: EventPublisher
    reads: Reads
    guard: WorkflowGuard


async def projections(
    store: WholeStore,
    *,
    live_waiters: LiveWaitersOf | None = None,
    agent_running: RunningLook | None = None,
) -> Any:
    bus = TapBus()
    projector = PendingProjector(store)
    summaries = SummaryService(store, bus)
    publisher = EventPublisher(bus, projector, summaries)
    reads = Reads(
        store,
        projector,
        summaries,
        live_waiters=live_waiters or local_only(lambda _pid: False),
    )
    if agent_running is not None:
        reads.use_agent_running(agent_running)
    await projector.allocate_epoch()
    return Projections(store, bus, projector, summaries, publisher, reads, WorkflowGuard(store))


class World:
    """Tasks, sessions, turns, bundles and permission requests in a few calls."""

    def __init__(self, store: WholeStore, clock: ManualClock) -> None:
        self.store = store
        self.clock = clock

    async def task(self) -> Task:
        workspace = await self.store.ensure_workspace("default")
        return await self.store.create_task(title="t", description="d", workspace_id=workspace.id)

    async def session(
        self,
        task_id: str | None = None,
        *,
        state: SessionState = SessionState.RUNNING,
        primary: bool = True,
        turn: bool = True,
    ) -> Session:
        if task_id is None:
            task_id = (await self.task()).id
        session = await self.store.create_session(
            task_id=task_id, agent="builtin", is_primary=primary
        )
        if turn:
            await self.turn(session.id)
        if state is not session.state:
            assert await self.store.transition_session(session.id, state, allowed_from=None)
        return await self.store.get_session(session.id)

    async def turn(self, session_id: str, **kwargs: Any) -> Turn:
        self.clock.advance(1)
        return await self.store.create_turn(session_id, **kwargs)

    async def ask(
        self, session_id: str, questions: Sequence[str] = ("db",), *, turn_id: str | None = None
    ) -> tuple[Message, ...]:
        self.clock.advance(1)
        pending_id = new_id()
        rows = [
            NewMessage(
                session_id=session_id,
                author_type="agent",
                type=MessageType.CLARIFICATION_REQUEST,
                content=f"{qid}?",
                metadata={
                    "pending_id": pending_id,
                    "question_id": qid,
                    "question": {
                        "id": qid,
                        "title": qid,
                        "prompt": f"{qid}?",
                        "options": [
                            {"option_id": f"{qid}_a", "label": "A", "description": ""},
                            {"option_id": f"{qid}_b", "label": "B", "description": ""},
                        ],
                    },
                    "question_index": index,
                    "question_total": len(questions),
                    "status": "pending",
                },
                requests_input=index == len(questions) - 1,
            )
            for index, qid in enumerate(questions)
        ]
        return (await self.store.create_bundle(session_id, rows, turn_id=turn_id)).rows

    async def answer(self, rows: Sequence[Message]) -> tuple[Message, ...]:
        """Claim and confirm the bundle of `rows`: it becomes terminal."""
        pending_id = str(rows[0].metadata["pending_id"])
        response = ClarificationResponse(
            pending_id=pending_id,
            answers=tuple(
                Answer(str(r.metadata["question_id"]), (f"{r.metadata['question_id']}_a",))
                for r in rows
            ),
            rejected=False,
        )
        claim = await self.store.claim_response(response, CLAIM, now=self.clock.now())
        assert claim.claimed, "the bundle was not answerable"
        assert await self.store.confirm_delivery(
            pending_id, [m.id for m in claim.claimed], RETIRE_INTENT
        )
        return tuple([await self.store.get_message(m.id) for m in claim.claimed])

    async def permission(self, session_id: str, status: str = "pending") -> Message:
        self.clock.advance(1)
        return await self.store.add_message(
            NewMessage(
                session_id, "agent", MessageType.PERMISSION_REQUEST, "may I?", {"status": status}
            )
        )

    async def say(self, session_id: str, text: str = "hello") -> Message:
        self.clock.advance(1)
        return await self.store.add_message(NewMessage(session_id, "agent", "message", text))


class GatedStore:
    """Wraps the whole store; a projection read (`pending_actions`, or `summary_inputs`, which
    a message event reads its projection from) can be held before or after its database read.

    `hold_before()` makes the next call wait before it reads; `hold_after()` makes it read at
    once and wait before returning. `release()` lets the held call go on. Everything else is
    the wrapped store's.
    """

    def __init__(self, inner: WholeStore) -> None:
        self._inner = inner
        self._mode: str | None = None
        self._gate = asyncio.Event()
        self.holding = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def hold_before(self) -> None:
        self._arm("before")

    def hold_after(self) -> None:
        self._arm("after")

    def _arm(self, mode: str) -> None:
        self._mode = mode
        self._gate = asyncio.Event()
        self.holding = asyncio.Event()

    def release(self) -> None:
        self._gate.set()

    async def pending_actions(self, session_ids: Sequence[str]) -> Any:
        return await self._gated(self._inner.pending_actions(session_ids))

    async def summary_inputs(self, task_id: str) -> Any:
        return await self._gated(self._inner.summary_inputs(task_id))

    async def _gated(self, read: Coroutine[Any, Any, Any]) -> Any:
        mode, self._mode = self._mode, None
        gate = self._gate
        if mode == "before":
            self.holding.set()
            await gate.wait()
        result = await read
        if mode == "after":
            self.holding.set()
            await gate.wait()
        return result


class FailingStore:
    """Wraps a store (a port's object, or all of them: `wrapping`); each method named in
    `fail` raises the given error instead of running;
    `hooks` run before the wrapped method (to simulate a concurrent writer)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.fail: dict[str, Exception] = {}
        self.hooks: dict[str, Callable[[], Any]] = {}
        self.calls: dict[str, int] = {}

    def wrapping(self, stores: Stores) -> Stores:
        """`stores` with each port's object seen through a FailingStore steered (and counted)
        by this one."""

        def over(port: Any) -> FailingStore:
            view = FailingStore(port)
            view.fail, view.hooks, view.calls = self.fail, self.hooks, self.calls
            return view

        return per_port(stores, over)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            error = self.fail.get(name)
            if error is not None:
                raise error
            hook = self.hooks.get(name)
            if hook is not None:
                await hook()
            return await attr(*args, **kwargs)

        return call


# ----------------------------------------------------------------------------- client model


@dataclass
class ClientModel:
    """The web store's rule for one session's projection (applyPendingProjection in
    src/clarion/web/js/store.js): an omitted field keeps the prior value; a revision from an
    epoch older than the highest seen, or older than the current one (epoch numerically, then
    sequence), is rejected."""

    pending: dict[str, str | None] = field(default_factory=dict)
    revisions: dict[str, tuple[int, int]] = field(default_factory=dict)
    highest_epoch: int | None = None

    def apply(self, session_id: str, fields: Mapping[str, Any]) -> bool:
        if "pending_action" not in fields:
            return False
        wire = fields.get("pending_action_revision")
        if wire is None:
            if session_id in self.revisions:
                return False
        else:
            revision = (int(wire["epoch"]), int(wire["sequence"]))
            if self.highest_epoch is not None and revision[0] < self.highest_epoch:
                return False
            current = self.revisions.get(session_id)
            if current is not None and revision < current:
                return False
            self.revisions[session_id] = revision
            self.highest_epoch = max(self.highest_epoch or 0, revision[0])
        self.pending[session_id] = fields["pending_action"]
        return True

    def apply_list(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            self.apply(str(row["id"]), row)
