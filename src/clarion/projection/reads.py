"""Read models for clients: tasks with repaired summaries, sessions with projections, bundles.

Task lists compare each cached summary with the repository and repair it (compare-and-set, the
revision advancing only on a semantic change). If a repair fails the task is returned with
`status_summary_invalidated` so a client drops its cached summary. A session list whose pending
projection cannot be computed fails instead of pretending nobody owes an answer.

A bundle's state hinges on whether a live waiter holds it, which in a cluster only the replica
owning its session knows; `live_waiters` answers that for a batch of pending ids, and is asked
only about bundles whose state depends on it, once per read.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from clarion.domain.bundles import (
    bundle_state,
    context_on,
    questions_of,
    receipt_of,
    winning_response,
)
from clarion.domain.errors import NotFound, ProjectionUnavailable
from clarion.domain.models import Bundle, BundleState, Session, Task
from clarion.domain.questions import question_wire
from clarion.domain.wire import message_wire, owner_wire, session_wire, task_wire, turn_wire
from clarion.ports import ReadStore
from clarion.projection.inbox import ACTIONABLE, inbox_item
from clarion.projection.pending import PendingProjector
from clarion.projection.summaries import Repair, SummaryService, task_pending
from clarion.projection.waiter_lookup import LiveWaitersOf
from clarion.projection.waiting import needs_deadlines, waiting_wire

log = logging.getLogger(__name__)

AgentRunningHere = Callable[[Session], bool | None]
"""Whether this process runs a session's agent; None when it cannot know (another replica's)."""

RunningLook = Callable[[], AgentRunningHere]
"""A look at which agents run here now, answering per session. A read takes it before it reads
the session rows: an idle stop records its reason on the row before it ends the process (and a
restart clears it only once the agent runs), so a row read after the look carries the reason
of any stop the look saw. Looking after the rows, a stop landing in between would read as an
agent gone for no reason."""


ReplicaUrls = Callable[[Collection[str]], Awaitable[Mapping[str, str]]]
"""The advertise URLs of those of these replicas that are known (cluster mode)."""


async def _no_urls(_replica_ids: Collection[str]) -> Mapping[str, str]:
    return {}


def _unknown() -> AgentRunningHere:
    return lambda _session: None


def running_among(running: frozenset[str]) -> AgentRunningHere:
    """The look of a single server: its runtime's running sessions at that moment."""
    return lambda session: session.id in running


class Reads:
    def __init__(
        self,
        store: ReadStore,
        projector: PendingProjector,
        summaries: SummaryService,
        live_waiters: LiveWaitersOf,
        agent_running: RunningLook = _unknown,
        sandbox_of: Callable[[str], str] = lambda _profile: "none",
    ) -> None:
        self._store = store
        self._projector = projector
        self._summaries = summaries
        self._live_waiters = live_waiters
        self._agent_running = agent_running
        # What a profile's agents run under (`bwrap` or `none`), for the session read.
        self._sandbox_of = sandbox_of
        self._workspace_names: dict[str, str] = {}
        self._answer_url: Callable[[str], str] | None = None
        self._replica_urls: ReplicaUrls = _no_urls
        self._decision_url: Callable[[str], str] | None = None

    def use_answer_links(
        self, answer_url: Callable[[str], str], decision_url: Callable[[str], str] | None = None
    ) -> None:
        """Bundle reads and inbox items carry `answer_url` (an answer link) while active; a
        permission request's read and inbox item `decision_url` (a decision link) while
        pending."""
        self._answer_url = answer_url
        self._decision_url = decision_url

    def with_decision_url(self, view: dict[str, Any], message_id: str) -> dict[str, Any]:
        """A permission request's read or inbox item, with its decision link while pending."""
        url_for = self._decision_url
        pending = view.get("state") == "pending"
        view["decision_url"] = url_for(message_id) if url_for is not None and pending else None
        return view

    def use_live_waiters(self, live_waiters: LiveWaitersOf) -> None:
        """Cluster mode: ask each bundle's owner, not only this replica's own waiters."""
        self._live_waiters = live_waiters

    def use_replica_urls(self, replica_urls: ReplicaUrls) -> None:
        """Cluster mode: session, bundle and permission reads carry their owner's advertise
        URL beside its id (`replica_url`)."""
        self._replica_urls = replica_urls

    async def _urls_of(self, sessions: Sequence[Session]) -> Mapping[str, str]:
        owners = {s.owner_replica_id for s in sessions if s.owner_replica_id is not None}
        return await self._replica_urls(owners) if owners else {}

    async def with_owner(self, view: dict[str, Any]) -> dict[str, Any]:
        """A read naming a session (`session_id`), with its owner's id and advertise URL in
        cluster mode."""
        session = await self._store.get_session(view["session_id"])
        view.update(owner_wire(session, await self._urls_of([session])))
        return view

    def use_agent_running(self, agent_running: RunningLook) -> None:
        """Cluster mode: an agent not running here may run on the session's owner."""
        self._agent_running = agent_running

    async def live_among(self, pending_ids: Sequence[str]) -> set[str]:
        """Which of these bundles a live agent call holds (in a cluster, on any replica)."""
        return set(await self._live_waiters(pending_ids))

    async def tasks(self, workspace_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return [await self.task_view(task) for task in await self._store.list_tasks(workspace_ids)]

    async def task(self, task_id: str) -> dict[str, Any]:
        return await self.task_view(await self._store.get_task(task_id))

    async def task_view(self, task: Task, *, repair: bool = True) -> dict[str, Any]:
        """The task DTO. With `repair`, the cached summary is compared with the repository and
        repaired; if that fails the task carries `status_summary_invalidated` (the legacy fields
        still carry the authoritative coarse action). If the repository itself cannot be read,
        the stored summary is returned as the last known value and the legacy fields are null.
        """
        if repair:
            outcome = await self._summaries.repair(task.id)
        else:
            inputs = await self._store.summary_inputs(task.id)
            outcome = Repair(summary=inputs.summary, pending=task_pending(inputs), failed=False)
        pending = outcome.pending
        return task_wire(
            task,
            workspace=await self._workspace_name(task.workspace_id),
            summary=outcome.summary,
            primary_session_pending_action=None
            if pending is None
            else pending.primary_session_action,
            task_pending_action=None if pending is None else pending.legacy_task_action,
            summary_invalidated=outcome.failed,
        )

    async def _workspace_name(self, workspace_id: str) -> str:
        name = self._workspace_names.get(workspace_id)
        if name is None:
            name = (await self._store.get_workspace(workspace_id)).name
            self._workspace_names[workspace_id] = name
        return name

    async def sessions(self, task_id: str) -> list[dict[str, Any]]:
        running = self._agent_running()  # before the rows (see RunningLook)
        await self._store.get_task(task_id)
        sessions = await self._store.list_sessions(task_id)
        return await self._project_sessions(sessions, running)

    async def session(self, session_id: str) -> dict[str, Any]:
        running = self._agent_running()
        session = await self._store.get_session(session_id)
        return (await self._project_sessions([session], running))[0]

    async def ensure_task(self, task_id: str) -> None:
        """NotFound unless the task exists; reads nothing else."""
        await self._store.get_task(task_id)

    async def ensure_session(self, session_id: str) -> None:
        """NotFound unless the session exists; reads nothing else."""
        await self._store.get_session(session_id)

    async def session_after_write(self, session_id: str) -> dict[str, Any]:
        """The session as a write left it. Its projection fields are omitted (clients keep
        their prior value) if the projection cannot be read: the write already happened, so
        failing the response would invite a duplicate retry."""
        running = self._agent_running()
        session = await self._store.get_session(session_id)
        try:
            return (await self._project_sessions([session], running))[0]
        except ProjectionUnavailable:
            body = session_wire(
                session,
                None,
                None,
                running_here=running(session),
                sandbox=self._sandbox_of(session.agent),
                replica_urls=await self._urls_of([session]),
            )
            del body["pending_action"]
            return body

    async def _project_sessions(
        self, sessions: list[Session], running: AgentRunningHere
    ) -> list[dict[str, Any]]:
        try:
            projections = await self._projector.project([s.id for s in sessions])
        except Exception as exc:
            log.exception(
                "pending projection failed for a session list",
                extra={"session_ids": [s.id for s in sessions]},
            )
            raise ProjectionUnavailable("failed to load task session pending actions") from exc
        urls = await self._urls_of(sessions)
        return [
            session_wire(
                s,
                projections[s.id].pending_action,
                projections[s.id].revision,
                running_here=running(s),
                sandbox=self._sandbox_of(s.agent),
                replica_urls=urls,
            )
            for s in sessions
        ]

    async def turns(self, session_id: str) -> list[dict[str, Any]]:
        await self._store.get_session(session_id)
        return [turn_wire(t) for t in await self._store.list_visible_turns(session_id)]

    async def messages(self, session_id: str, *, after: str | None, limit: int) -> dict[str, Any]:
        await self._store.get_session(session_id)
        page = await self._store.list_messages(session_id, after=after, limit=limit)
        return {
            "messages": [message_wire(m) for m in page.messages],
            "total": page.total,
            "next": page.next_after,
        }

    async def inbox(
        self, workspace_ids: Sequence[str] | None, user: str | None = None
    ) -> dict[str, Any]:
        """Every item the caller may act on now, oldest first (`GET /inbox`): their
        workspaces' and the questions escalated to them."""
        entries = await self._store.inbox_entries(workspace_ids, escalated_to=user)
        views = await self._bundle_views([e.id for e in entries if e.kind != "permission"])
        items = [inbox_item(e, views.get(e.id)) for e in entries]
        found = [item for item in items if item is not None]
        for item in found:
            if item["kind"] == "clarification":
                self._with_answer_url(item, item["id"])
            else:
                self.with_decision_url(item, item["id"])
        return {"items": found, "total": len(found)}

    async def bundle(self, pending_id: str) -> dict[str, Any]:
        view = (await self._bundle_views([pending_id])).get(pending_id)
        if view is None:
            raise NotFound("clarification request not found", pending_id=pending_id)
        return self._with_answer_url(view, pending_id)

    async def has_bundle(self, pending_id: str) -> bool:
        return await self._store.find_bundle(pending_id) is not None

    async def linked_bundle(self, pending_id: str) -> dict[str, Any]:
        """What an answer link shows: the bundle read, its task's title and description, and
        the winning response once there is one (the page says who answered)."""
        view = await self.bundle(pending_id)
        bundle = await self._store.find_bundle(pending_id)
        if bundle is None:  # never deleted once read; kept for the type
            raise NotFound("clarification request not found", pending_id=pending_id)
        task = await self._store.get_task(bundle.session.task_id)
        view["task"] = {"id": task.id, "title": task.title, "description": task.description}
        view["response"] = winning_response(bundle)
        return view

    def _with_answer_url(self, view: dict[str, Any], pending_id: str) -> dict[str, Any]:
        url_for = self._answer_url
        active = view.get("state") in ACTIONABLE
        view["answer_url"] = url_for(pending_id) if url_for is not None and active else None
        return view

    async def _bundle_views(self, pending_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The views of those bundles that exist, by pending id."""
        bundles: list[Bundle] = []
        for pending_id in dict.fromkeys(pending_ids):
            bundle = await self._store.find_bundle(pending_id)
            if bundle is not None:
                bundles.append(bundle)
        states = await self._states(bundles)
        urls = await self._urls_of([b.session for b in bundles])
        policed = [b.pending_id for b in bundles if needs_deadlines(b)]
        deadlines = await self._store.find_deadlines(policed) if policed else {}
        return {
            b.pending_id: {
                **_bundle_wire(b, states[b.pending_id]),
                **waiting_wire(b, deadlines.get(b.pending_id)),
                **owner_wire(b.session, urls),
            }
            for b in bundles
        }

    async def _states(self, bundles: Sequence[Bundle]) -> dict[str, BundleState]:
        """Each bundle's state, asking which are held by a live waiter once, and only about
        the bundles whose state depends on it: in a cluster the question may cross the
        network, and a terminal or claimed bundle reads the same either way."""
        hinged = [
            b.pending_id
            for b in bundles
            if bundle_state(b, has_live_waiter=True) != bundle_state(b, has_live_waiter=False)
        ]
        held = await self._live_waiters(hinged) if hinged else set()
        return {
            b.pending_id: bundle_state(b, has_live_waiter=b.pending_id in held) for b in bundles
        }


def _bundle_wire(bundle: Bundle, state: BundleState) -> dict[str, Any]:
    first = bundle.rows[0]
    receipt = receipt_of(bundle)
    return {
        "pending_id": bundle.pending_id,
        "session_id": bundle.session.id,
        "task_id": bundle.session.task_id,
        "turn_id": first.turn_id,
        "state": str(state),
        "questions": [question_wire(q) for q in questions_of(bundle)],
        "context": context_on(first),
        "delivery": None if receipt is None else receipt.value,
        "rows": [message_wire(m) for m in bundle.rows],
    }
