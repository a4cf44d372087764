"""Clarion's built-in scripted ACP agent: `python -m clarion.agents.builtin`.

A real ACP program over stdio, started by the runtime like any other agent and used by the
demo and the tests. What each prompt does lives in `clarion.agents.scenarios`, the host the
scenarios talk through in `clarion.agents.builtin_host`; this module is the ACP side
(sessions, prompt, cancel). Nothing in Clarion imports it. Stdout carries ACP frames only, so
everything else goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import json
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any, cast

if __name__ == "__main__":
    # The ACP schema's import makes some hundred thousand objects that live as long as the
    # process; the collector walking them again and again while they are made cost a tenth of
    # the agent's start. main() turns it back on (and freezes them out of its view).
    gc.disable()

import acp
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptResponse,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
)

from clarion.agents.builtin_host import (
    AgentSession,
    Endpoint,
    PromptHost,
    load_mcp_client_in_background,
)
from clarion.agents.scenarios import may_ask, play

logger = logging.getLogger("clarion.agents.builtin")

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
McpServerSpec = HttpMcpServer | SseMcpServer | acp.schema.AcpMcpServer | McpServerStdio


# What the agent remembers of a session, kept on disk so that a restarted agent can load it.
MEMORY_PROMPTS = 20


class _Memory:
    """Each session's prompts as a small JSON file under `<home>/builtin-agent`."""

    def __init__(self, home: Path) -> None:
        self._dir = home / "builtin-agent" / "sessions"

    def _path(self, session_id: str) -> Path:
        # Session ids are ours (uuid hex); anything else is refused rather than used as a path.
        if not session_id.isalnum():
            raise ValueError(f"not a session id: {session_id!r}")
        return self._dir / f"{session_id}.json"

    def load(self, session_id: str) -> list[str] | None:
        try:
            data = json.loads(self._path(session_id).read_text())
        except (OSError, ValueError):
            return None
        prompts = data.get("prompts") if isinstance(data, dict) else None
        if not isinstance(prompts, list):
            return None
        return [p for p in prompts if isinstance(p, str)]

    def save(self, session_id: str, prompts: list[str]) -> None:
        path = self._path(session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"prompts": prompts[-MEMORY_PROMPTS:]}))
        os.replace(tmp, path)


class BuiltinAgent:
    """The ACP agent side. Methods it lacks answer `method not found` through the SDK router."""

    def __init__(self, memory: _Memory | None = None, journal: Path | None = None) -> None:
        self._conn: acp.Client | None = None
        self._sessions: dict[str, AgentSession] = {}
        self._memory = memory
        self._journal = journal
        self.call_ids = itertools.count(1)

    def journal(self, kind: str, session_id: str, text: str) -> None:
        """Append what this agent received to the journal file, if one is configured: the
        ground truth a soak test checks "delivered exactly once" against. One short write per
        line in append mode, so lines from several agent processes never interleave."""
        if self._journal is None:
            return
        line = json.dumps({"kind": kind, "acp_session": session_id, "text": text}) + "\n"
        with self._journal.open("a") as out:
            out.write(line)

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> acp.Client | None:
        return self._conn

    async def send(self, session_id: str, update: Any) -> None:
        assert self._conn is not None, "on_connect runs before any request"
        await self._conn.session_update(session_id=session_id, update=update)

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=self._memory is not None,
                mcp_capabilities=McpCapabilities(http=True),
            ),
            agent_info=Implementation(name="clarion-builtin", version="1"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServerSpec] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        endpoint = _endpoint(mcp_servers)
        session_id = uuid.uuid4().hex
        self._sessions[session_id] = AgentSession(endpoint=endpoint, cwd=cwd)
        logger.info("session %s: mcp endpoint %s", session_id, endpoint.url if endpoint else None)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServerSpec] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        prompts = self._memory.load(session_id) if self._memory is not None else None
        if prompts is None:
            raise acp.RequestError.resource_not_found(session_id)
        self._sessions[session_id] = AgentSession(
            endpoint=_endpoint(mcp_servers), prompts=prompts, cwd=cwd
        )
        # session/load replays the conversation to the client before answering.
        for text in prompts:
            await self.send(session_id, acp.update_user_message_text(text))
        logger.info("session %s loaded (%d prompts remembered)", session_id, len(prompts))
        return LoadSessionResponse()

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise acp.RequestError.invalid_params({"sessionId": f"unknown session {session_id}"})
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        if may_ask(text):
            load_mcp_client_in_background()
        self.journal("prompt", session_id, text)
        session.prompts.append(text)
        del session.prompts[:-MEMORY_PROMPTS]
        if self._memory is not None:
            try:
                self._memory.save(session_id, session.prompts)
            except OSError as exc:
                # A home it may not write (a sandbox hiding it): the prompt still runs; only a
                # later session/load will not find this session.
                logger.warning("session %s not kept: %s", session_id, exc)
        # The SDK does not cancel a running prompt on session/cancel; cancel() does, via this.
        task = asyncio.current_task()
        session.running = task
        try:
            await play(PromptHost(self, session_id, session), text)
        except asyncio.CancelledError:
            if task is not None:
                task.uncancel()
            return PromptResponse(stop_reason="cancelled")
        finally:
            if session.running is task:
                session.running = None
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.running is not None:
            session.running.cancel()


def _endpoint(servers: list[McpServerSpec] | None) -> Endpoint | None:
    for server in servers or []:
        if isinstance(server, HttpMcpServer):
            return Endpoint(url=server.url, headers=_headers(server.headers))
    return None


def _headers(headers: list[HttpHeader]) -> dict[str, str]:
    return {h.name: h.value for h in headers}


async def exit_when_orphaned(interval_s: float = 0.5) -> None:
    """Exit once the process that started us is gone.

    Clarion stops its agents itself (stdin closed, then signals), but a server that is killed
    outright cannot, and an agent holding a prompt open (`ask-silent`) would otherwise outlive
    it. The kernel re-parents an orphan, which is what this watches for."""
    parent = os.getppid()
    # No event exists for a parent's death; polling getppid is the portable way to see it.
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(interval_s)
    logger.warning("the process that started this agent is gone; exiting")
    logging.shutdown()
    os._exit(0)


async def serve(agent: Any) -> None:
    """Run an ACP agent on stdio until its client leaves."""
    watcher = asyncio.create_task(exit_when_orphaned())
    try:
        await acp.run_agent(cast(acp.Agent, agent))
    finally:
        watcher.cancel()


def _memory_from_env() -> _Memory | None:
    """Sessions are kept in the agent's own home (Clarion gives it `agent-homes/builtin` in
    its home, sandboxed or not) and loadable after a restart; a CLARION_HOME its profile sets
    keeps them there instead. CLARION_BUILTIN_LOAD_SESSION=0 plays an agent without
    session/load (tests of the recap)."""
    if os.environ.get("CLARION_BUILTIN_LOAD_SESSION", "1") == "0":
        return None
    return _Memory(Path(os.environ.get("CLARION_HOME") or Path.home()))


def main() -> None:
    gc.freeze()  # what the imports made stays; later collections need not walk it
    gc.enable()
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("CLARION_AGENT_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        journal = os.environ.get("CLARION_BUILTIN_JOURNAL")
        agent = BuiltinAgent(_memory_from_env(), Path(journal) if journal else None)
        asyncio.run(serve(agent))


if __name__ == "__main__":
    main()
