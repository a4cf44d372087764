"""In-process lifecycle harness: the real services on a real database, with a scripted agent
runtime behind the AgentRuntime port so a test can decide exactly when an agent accepts,
speaks, goes silent, or ends its turn. Real agents are covered end to end in tests/e2e."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clarion.config import AgentProfile, Settings, Timeouts, builtin_profile
from clarion.domain.models import Bundle, Turn
from clarion.ports import (
    AcpSessionInfo,
    AgentLaunch,
    AgentOutput,
    AgentSink,
    Clock,
    Event,
    PromptFinished,
)
from clarion.ports.tracing import Tracer
from clarion.runtime.clock import ManualClock
from clarion.server.wiring import App, build
from clarion.store import Stores
from tests.whole_store import WholeStore, per_port, whole_of

ASK_DB = {
    "questions": [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [
                {"label": "PostgreSQL", "option_id": "postgres"},
                {"label": "MongoDB", "option_id": "mongodb"},
                {"label": "SQLite", "option_id": "sqlite"},
            ],
        }
    ]
}


def answer_db(option: str = "postgres") -> dict[str, Any]:
    return {
        "answers": [{"question_id": "db", "selected_options": [option], "custom_text": ""}],
        "rejected": False,
        "reject_reason": "",
    }


SKIP = {"rejected": True, "reject_reason": "User skipped", "answers": []}


class AgentRefused(Exception):
    pass


@dataclass
class ScriptedRuntime:
    """An AgentRuntime whose agents do only what the test tells them."""

    profiles: Mapping[str, AgentProfile]
    sink: AgentSink
    running: set[str] = field(default_factory=set)
    active: dict[str, int] = field(default_factory=dict)
    prompts: list[tuple[str, str, int]] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    refuse_prompts: bool = False
    accept_delay: float = 0.0
    # Text the agent streams while a cancellation settles (independent activity).
    cancel_chatter: str | None = None
    prompted: asyncio.Condition = field(default_factory=asyncio.Condition)
    loads_sessions: bool = True
    fail_starts: bool = False
    # Called at each start, before it succeeds or fails (what the store holds at that moment).
    on_start: Callable[[AgentLaunch], Awaitable[None]] | None = None
    launches: list[AgentLaunch] = field(default_factory=list)

    async def __aenter__(self) -> ScriptedRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.running.clear()

    async def ensure_started(self, launch: AgentLaunch) -> bool:
        if launch.session_id in self.running:
            return False
        self.launches.append(launch)
        if self.on_start is not None:
            await self.on_start(launch)
        if self.fail_starts:
            raise AgentRefused("the agent could not start")
        self.running.add(launch.session_id)
        return True

    async def prompt(self, session_id: str, text: str, *, generation: int) -> None:
        if self.accept_delay:
            await asyncio.sleep(self.accept_delay)
        if self.refuse_prompts or session_id not in self.running:
            raise AgentRefused("the agent refused the prompt")
        self.active[session_id] = generation
        async with self.prompted:
            self.prompts.append((session_id, text, generation))
            self.prompted.notify_all()

    async def cancel(self, session_id: str) -> None:
        self.cancels.append(session_id)
        generation = self.active.pop(session_id, None)
        if generation is not None:
            if self.cancel_chatter is not None:
                await self.sink.on_output(
                    AgentOutput(session_id, generation, "message", self.cancel_chatter)
                )
            await self.sink.on_output(AgentOutput(session_id, generation, "cancel_ack"))
            await self.sink.on_prompt_finished(PromptFinished(session_id, generation, "cancelled"))

    async def stop(self, session_id: str) -> None:
        self.running.discard(session_id)

    def is_running(self, session_id: str) -> bool:
        return session_id in self.running

    def running_sessions(self) -> frozenset[str]:
        return frozenset(self.running)

    def acp_session(self, session_id: str) -> AcpSessionInfo | None:
        # An agent that loads its earlier session, so prompts carry no recap.
        if session_id not in self.running:
            return None
        return AcpSessionInfo(session_id=f"acp-{session_id}", loaded=self.loads_sessions)

    # ------------------------------------------------------------ what the test makes agents do

    async def say(self, session_id: str, text: str, *, kind: str = "message") -> None:
        await self.sink.on_output(AgentOutput(session_id, self.active[session_id], kind, text))

    async def end_turn(
        self, session_id: str, generation: int | None = None, stop_reason: str = "end_turn"
    ) -> None:
        if generation is None:
            generation = self.active.pop(session_id)
        elif self.active.get(session_id) == generation:
            del self.active[session_id]
        await self.sink.on_prompt_finished(PromptFinished(session_id, generation, stop_reason))

    async def wait_for_prompts(self, count: int, within: float = 60) -> list[tuple[str, str, int]]:
        async with self.prompted:
            await asyncio.wait_for(
                self.prompted.wait_for(lambda: len(self.prompts) >= count), within
            )
        return self.prompts


@dataclass
class Lifecycle:
    app: App
    runtime: ScriptedRuntime
    events: list[Event]
    arrived: asyncio.Condition  # notified whenever `events` grows
    keepalives: list[str] = field(default_factory=list)  # progress sent on asked tool calls

    @property
    def store(self) -> WholeStore:
        """Every port's calls, as the services were handed them (wrapped, if the test did)."""
        return whole_of(self.app.stores)

    async def live_reservation(self, session_id: str) -> Turn | None:
        """A store probe no port declares (services may not look): the live reservation."""
        return await self.app.stores.probes.find_live_reservation(session_id)

    async def start_session(self, prompt: str = "work on it") -> tuple[str, str]:
        svc = self.app.services
        task = await svc.tasks.create(title="t", description="", workspace=None)
        session = await svc.sessions.start(task.id, agent="builtin", prompt=prompt, is_primary=True)
        return task.id, session.id

    async def ask(
        self, session_id: str, arguments: object = ASK_DB
    ) -> tuple[asyncio.Task[str], str]:
        """Start the agent's tool call; returns it (still waiting) and the bundle's pending id
        once its rows are committed and its live waiter is registered."""
        before = {w.pending_id for w in self.app.waiters.for_session(session_id)}
        added = len(self.events_of("session.message.added"))

        async def progress(message: str) -> None:
            self.keepalives.append(message)

        call = asyncio.create_task(self.app.services.asker.ask(session_id, arguments, progress))

        async def asked() -> str:
            # The asker publishes the rows' `added` events after committing them.
            while True:
                if call.done():
                    call.result()
                fresh = {w.pending_id for w in self.app.waiters.for_session(session_id)} - before
                if fresh and any(
                    e.payload.get("metadata", {}).get("pending_id") in fresh
                    for e in self.events_of("session.message.added")[added:]
                ):
                    return fresh.pop()
                await asyncio.sleep(0.001)

        return call, await asyncio.wait_for(asked(), 10)

    async def bundle(self, pending_id: str) -> Bundle:
        bundle = await self.store.find_bundle(pending_id)
        assert bundle is not None
        return bundle

    async def state(self, pending_id: str) -> str:
        return str((await self.app.services.reads.bundle(pending_id))["state"])

    def events_of(self, type_: str) -> list[Event]:
        return [e for e in self.events if e.type == type_]

    async def wait_for_event(
        self, type_: str, predicate: Callable[[Event], bool], within: float = 60.0
    ) -> Event:
        """The first collected `type_` event matching `predicate`, waiting for it if needed."""

        def found() -> Event | None:
            return next((e for e in self.events_of(type_) if predicate(e)), None)

        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: found() is not None), within)
        event = found()
        assert event is not None
        return event

    async def settle(self) -> None:
        """Let published events reach the collector."""
        for _ in range(5):
            await asyncio.sleep(0)


def fast_settings(database_url: str, **timeouts: float) -> Settings:
    values = {
        "clarification_wait": 30.0,
        "keepalive": 10.0,
        "resume_accept": 1.0,
        "live_confirm": 1.0,
        "watchdog": 0.2,
        # A ceiling on each store write, not a delay: generous, so a database slowed by a
        # loaded machine makes a test slower, never red.
        "persist": 10.0,
        **timeouts,
    }
    # No idle stop: tests here count the sleepers of a manual clock, and an idle-stop timer
    # per running agent would be one more (tests/lifecycle/test_idle_stop.py sets its own).
    builtin = dataclasses.replace(builtin_profile(), idle_stop_after=0)
    return Settings(
        database_url=database_url,
        timeouts=Timeouts(**values),
        agents={"builtin": builtin},
    )


@contextlib.asynccontextmanager
async def running_lifecycle(
    database_url: str,
    *,
    store_wrapper: Callable[[Stores], Stores] | None = None,
    clock: Clock | None = None,
    **timeouts: float,
) -> AsyncIterator[Lifecycle]:
    settings = fast_settings(database_url, **timeouts)
    async with lifecycle_on(settings, store_wrapper=store_wrapper, clock=clock) as life:
        yield life


@contextlib.asynccontextmanager
async def lifecycle_on(
    settings: Settings,
    *,
    store_wrapper: Callable[[Stores], Stores] | None = None,
    clock: Clock | None = None,
    tracer: Tracer | None = None,
) -> AsyncIterator[Lifecycle]:
    """`running_lifecycle` with settings of the test's own (webhooks, ...), and optionally a
    tracer of the test's own."""
    holder: dict[str, ScriptedRuntime] = {}

    def factory(profiles: Mapping[str, AgentProfile], sink: AgentSink) -> ScriptedRuntime:
        holder["runtime"] = ScriptedRuntime(profiles, sink)
        return holder["runtime"]

    async with build(
        settings,
        lambda: "http://127.0.0.1:1",
        runtime_factory=factory,
        store_wrapper=store_wrapper,
        clock=clock,
        tracer=tracer,
    ) as app:
        events: list[Event] = []
        arrived = asyncio.Condition()
        subscription = app.bus.subscribe()

        async def collect() -> None:
            async for event in subscription:
                async with arrived:
                    events.append(event)
                    arrived.notify_all()

        collector = asyncio.create_task(collect())
        await app.recovery.run()
        app.start_deadlines(None)
        app.services.ready.set()
        try:
            yield Lifecycle(app=app, runtime=holder["runtime"], events=events, arrived=arrived)
        finally:
            collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collector


async def detached_question(life: Lifecycle, session_id: str) -> str:
    """A bundle in the session's current turn whose waiter went away and whose turn ended."""
    call, pending_id = await life.ask(session_id)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await life.runtime.end_turn(session_id)
    assert await life.state(pending_id) == "active_detached"
    return pending_id


class FailingStore:
    """Wraps a store's port (or all of them, `wrapping`); the named methods raise (or run a
    hook) instead of running."""

    def __init__(self, inner: Any, fail: dict[str, Exception] | None = None) -> None:
        self._inner = inner
        self.fail: dict[str, Exception] = dict(fail or {})
        # name -> coroutine function run right after the named method returned
        self.after: dict[str, Callable[[], Any]] = {}
        # name -> coroutine function awaited before the named method runs (to hold it back).
        # A held call finishes despite a caller that gave up, as every store call does.
        self.before: dict[str, Callable[[], Any]] = {}

    def wrapping(self, stores: Stores) -> Stores:
        """`stores` with each port's object seen through a FailingStore steered by this one:
        a method named here fails or waits on whichever port's object the service calls it."""

        def over(port: Any) -> FailingStore:
            view = FailingStore(port)
            view.fail, view.after, view.before = self.fail, self.after, self.before
            return view

        return per_port(stores, over)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        error = self.fail.get(name)
        hold = self.before.get(name)
        if hold is not None:

            async def held(*args: Any, **kwargs: Any) -> Any:
                async def run() -> Any:
                    await hold()
                    return await attr(*args, **kwargs)

                return await asyncio.shield(asyncio.ensure_future(run()))

            return held
        hook = self.after.get(name)
        if hook is not None:

            async def then_hook(*args: Any, **kwargs: Any) -> Any:
                result = await attr(*args, **kwargs)
                await hook()
                return result

            return then_hook
        if error is None:
            return attr

        async def failing(*args: Any, **kwargs: Any) -> Any:
            raise error

        return failing


class ManualTimers(ManualClock):
    """Timers (monotonic time, sleeps) that move only with `advance`; wall time stays real,
    so records are stamped and ordered as in production."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@contextlib.asynccontextmanager
async def lifecycle_with_failing_store(
    database_url: str, clock: Clock | None = None, **timeouts: float
) -> AsyncIterator[tuple[Lifecycle, FailingStore]]:
    """A lifecycle whose services see the store through a FailingStore the test steers."""
    holder: dict[str, FailingStore] = {}

    def wrap(stores: Stores) -> Stores:
        holder["store"] = failing = FailingStore(whole_of(stores))
        return failing.wrapping(stores)

    async with running_lifecycle(database_url, store_wrapper=wrap, clock=clock, **timeouts) as life:
        yield life, holder["store"]
