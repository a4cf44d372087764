"""One running agent: its process, its ACP connection and session, and its prompt runs.

Imported by `clarion.agents.runtime` and `clarion.agents.check` only. What the agent streams
reaches the sink in order through `OrderedOutput`. The agent owns its tasks (stderr drain, exit
watcher, output consumer, the running prompt) and cancels them in `close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import acp
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import InitializeResponse

from clarion.agents.acp_session import initialize, open_acp_session
from clarion.agents.client import PermissionPolicy, SessionClient
from clarion.agents.frames import to_output
from clarion.agents.ordered_output import OrderedOutput
from clarion.agents.process import drain_stderr, shut_down
from clarion.agents.prompt_run import PromptRun, send_prompt
from clarion.domain.errors import AgentBusy, AgentFailure
from clarion.ports import AgentExited, AgentOutput, AgentSink, PromptFinished

logger = logging.getLogger(__name__)

# Bounds on things that would otherwise wait on a wedged agent or sink forever.
SEND_TIMEOUT_S = 5.0
EXIT_GRACE_S = 2.0
SINK_DRAIN_TIMEOUT_S = 5.0

# How much of an agent's stderr a failure report carries.
STDERR_REPORT_CHARS = 2000


@dataclass(slots=True, eq=False)
class RunningAgent:
    session_id: str
    profile: str
    proc: asyncio.subprocess.Process
    sink: AgentSink
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    acp_session_id: str | None = None
    loaded: bool = False  # the ACP session was loaded (session/load), not created
    _conn: ClientSideConnection | None = None
    _output: OrderedOutput = field(init=False)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _generation: int = 0
    _prompted: bool = False
    _run: PromptRun | None = None
    _exit_code: int | None = None
    _closing: bool = False
    _init: InitializeResponse | None = None

    def __post_init__(self) -> None:
        self._output = OrderedOutput(self.session_id, self.sink)

    # ----------------------------------------------------------------------- lifecycle

    def attach(self, permissions: PermissionPolicy) -> None:
        """Connect ACP to the process pipes and start the agent's own tasks."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        client = SessionClient(self.session_id, self._on_update, permissions)
        self._conn = acp.connect_to_agent(
            cast(acp.Client, client), self.proc.stdin, self.proc.stdout, observers=[self._observe]
        )
        name = f"agent[{self.session_id}]"
        self._tasks["stderr"] = asyncio.create_task(
            drain_stderr(self.proc.stderr, self.session_id, self.stderr_tail), name=f"{name}.stderr"
        )
        self._tasks["consumer"] = asyncio.create_task(
            self._output.consume(), name=f"{name}.consumer"
        )
        self._tasks["exit"] = asyncio.create_task(self._watch_exit(), name=f"{name}.exit")

    async def open_session(
        self, *, mcp_url: str, mcp_token: str, cwd: str, resume_id: str | None = None
    ) -> None:
        """ACP initialize (unless `handshake` did it), then the session: see `open_acp_session`."""
        init = self._init or await self.handshake()
        self.acp_session_id, self.loaded = await open_acp_session(
            self._require_conn(),
            init,
            session_id=self.session_id,
            profile=self.profile,
            mcp_url=mcp_url,
            mcp_token=mcp_token,
            cwd=cwd,
            resume_id=resume_id,
        )

    async def handshake(self) -> InitializeResponse:
        """ACP initialize alone (`open_session` does it when it was not done): `clarion agents
        check` times it apart from the session."""
        self._init = await initialize(self._require_conn())
        return self._init

    @property
    def is_running(self) -> bool:
        return (
            not self._closing
            and self._exit_code is None
            and self.proc.returncode is None
            and self.acp_session_id is not None
        )

    def describe_failure(self) -> str:
        code = self.proc.returncode
        state = f"exited with code {code}" if code is not None else "not running"
        tail = " | ".join(self.stderr_tail)
        return f"agent {self.profile!r} {state}" + (f"; stderr: {tail}" if tail else "")

    def stderr_text(self) -> str:
        """The agent's last stderr lines, at most STDERR_REPORT_CHARS of them."""
        return "\n".join(self.stderr_tail)[-STDERR_REPORT_CHARS:]

    async def close(self, grace: float) -> None:
        """Stop the process and every task; pending items still reach the sink (bounded)."""
        if self._closing:
            return
        self._closing = True
        if self._run is not None:
            self._run.abort_reason = self._run.abort_reason or "agent stopped"
        if self._conn is not None:
            # Rejects the pending prompt request, so its run reports an error to the sink.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.close(), SEND_TIMEOUT_S)
        code = await shut_down(self.proc, grace)
        logger.info("agent stopped (exit code %s)", code, extra={"session_id": self.session_id})
        run = self._run
        if run is not None and run.task is not None:
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
        await self._finish_task("exit", EXIT_GRACE_S)
        await self._finish_task("stderr", EXIT_GRACE_S)
        self._output.end()
        # A sink that stops the agent from inside its own callback must not wait for itself.
        if asyncio.current_task() is not self._tasks.get("consumer"):
            await self._finish_task("consumer", SINK_DRAIN_TIMEOUT_S)

    async def _finish_task(self, key: str, within: float) -> None:
        task = self._tasks.get(key)
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=within)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # ----------------------------------------------------------------------- prompts

    async def prompt(self, text: str, generation: int, accept_timeout: float) -> None:
        if not self.is_running:
            raise AgentFailure(self.describe_failure(), session_id=self.session_id)
        if self._run is not None:
            raise AgentBusy(
                f"a prompt (generation {self._run.generation}) is still running",
                session_id=self.session_id,
            )
        run = PromptRun(generation, asyncio.get_running_loop().create_future())
        self._run = run
        self._generation = generation
        self._prompted = True
        run.task = asyncio.create_task(
            self._drive(run, text), name=f"agent[{self.session_id}].prompt[{generation}]"
        )
        try:
            await asyncio.wait(
                {run.sent, run.task}, timeout=accept_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            if not run.sent.done():
                run.abort_reason = "prompt was not handed to the agent"
                run.task.cancel()
        if not run.sent.done():
            await asyncio.gather(run.task, return_exceptions=True)
            raise AgentFailure(
                f"prompt not accepted: {self.describe_failure()}",
                session_id=self.session_id,
                generation=generation,
            )

    async def _drive(self, run: PromptRun, text: str) -> None:
        conn = self._require_conn()
        assert self.acp_session_id is not None
        end = await send_prompt(conn, self.acp_session_id, text, run)
        error = end.error
        if not run.sent.done():
            if self._run is run:
                self._run = None
            return  # never handed over: prompt() raises instead of reporting a turn end
        alive = await self._still_alive(wait=end.lost) if error is not None else True
        if self._run is run:
            self._run = None
        extra = {"session_id": self.session_id, "generation": run.generation}
        if error is not None:
            logger.warning("prompt failed: %s", error, extra=extra)
        if run.cancel_requested:
            self._output.put(AgentOutput(self.session_id, run.generation, "cancel_ack"))
        self._output.put(
            PromptFinished(
                self.session_id,
                run.generation,
                end.stop_reason,
                error=error,
                agent_alive=alive,
                stderr=self.stderr_text() if error is not None else "",
            )
        )

    async def _still_alive(self, *, wait: bool) -> bool:
        """Whether a failed prompt left the agent running. A lost connection usually means the
        process is exiting, so (with `wait`) its exit is awaited briefly rather than guessed."""
        if self._closing:
            return False
        if wait:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), EXIT_GRACE_S / 4)
        return not self._closing and self.proc.returncode is None

    async def cancel(self) -> None:
        run = self._run
        if run is not None:
            run.cancel_requested = True
        if not self.is_running:
            return
        assert self.acp_session_id is not None
        try:
            await asyncio.wait_for(
                self._require_conn().cancel(session_id=self.acp_session_id), SEND_TIMEOUT_S
            )
        except (Exception, TimeoutError) as exc:
            logger.warning(
                "could not send session/cancel: %r", exc, extra={"session_id": self.session_id}
            )

    # ----------------------------------------------------------------------- callbacks

    def _observe(self, event: StreamEvent) -> None:
        # Called right after a frame was written to the agent's stdin.
        if event.direction is not StreamDirection.OUTGOING:
            return
        if event.message.get("method") != "session/prompt":
            return
        run = self._run
        if run is not None and not run.sent.done():
            run.sent.set_result(None)

    def _on_update(self, update: Any) -> None:
        if not self._prompted:
            # No prompt was ever sent to this process: what it streams is session/load
            # replaying the conversation Clarion already recorded (or start-up chatter).
            return
        output = to_output(self.session_id, self._generation, update)
        if output is not None:
            self._output.put(output)

    async def _watch_exit(self) -> None:
        code = await self.proc.wait()
        self._exit_code = code
        if not self._closing:
            logger.warning(
                "agent process exited unexpectedly: %s",
                self.describe_failure(),
                extra={"session_id": self.session_id},
            )
        run = self._run
        if run is not None and run.task is not None:
            # The connection normally fails the pending prompt at stdout EOF; a grandchild still
            # holding stdout open (or a write stuck on the dead pipe) would hang it, so bound it.
            done, _ = await asyncio.wait({run.task}, timeout=EXIT_GRACE_S)
            if not done:
                run.abort_reason = run.abort_reason or f"agent process exited with code {code}"
                run.task.cancel()
                await asyncio.gather(run.task, return_exceptions=True)
        # Reported after the prompt's end, and only for an agent that was running: one that
        # dies while starting is the start's failure, one Clarion stopped is no news.
        if not self._closing and self.acp_session_id is not None:
            await self._finish_task("stderr", EXIT_GRACE_S)
            self._output.put(AgentExited(self.session_id, code, self.stderr_text()))

    def _require_conn(self) -> ClientSideConnection:
        if self._conn is None:
            raise AgentFailure("agent not connected", session_id=self.session_id)
        return self._conn
