"""The benchmark's view of a running server: HTTP calls and one WebSocket feed.

`Feed` reads every WebSocket notification in a background task and resolves waiters keyed
by session id, stamping each with the perf_counter instant the notification was read. A
waiter is registered before the action that causes its event, so no event can be missed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

Notification = dict[str, Any]

# Below the server's keep-alive timeout (uvicorn's 5 s): a client that keeps an idle connection
# exactly as long as the server does can send a request into a connection the server is closing.
KEEPALIVE_EXPIRY_S = 2.0
Predicate = Callable[[Notification], bool]

ASK = "/scenario ask"
ASK_SILENT = "/scenario ask-silent"
ANSWER = {
    "answers": [{"question_id": "db", "selected_options": ["postgres"], "custom_text": ""}],
    "rejected": False,
    "reject_reason": "",
}


def ask_timeout(seconds: float) -> str:
    return f"/scenario ask-timeout t={seconds:g}"


def is_question(note: Notification) -> bool:
    p = note["payload"]
    return bool(
        note["action"] == "session.message.added" and p.get("type") == "clarification_request"
    )


def is_agent_text(needle: str) -> Predicate:
    def match(note: Notification) -> bool:
        p = note["payload"]
        return (
            note["action"] in ("session.message.added", "session.message.updated")
            and p.get("author_type") == "agent"
            and p.get("type") == "message"
            and needle in str(p.get("content", ""))
        )

    return match


def is_turn_completed(note: Notification) -> bool:
    return bool(note["action"] == "session.turn.completed")


def is_summary(pending_action: str | None) -> Predicate:
    def match(note: Notification) -> bool:
        summary = note["payload"].get("status_summary") or {}
        return bool(
            note["action"] == "task.status_summary.updated"
            and summary.get("pending_action") == pending_action
        )

    return match


def pending_id_of(note: Notification) -> str:
    return str(note["payload"]["metadata"]["pending_id"])


@dataclass
class _Waiter:
    predicate: Predicate
    future: asyncio.Future[tuple[float, Notification]]


class Feed:
    """One WebSocket connection receiving every notification (or those it subscribed to)."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._waiters: dict[str, list[_Waiter]] = defaultdict(list)
        self._replies: dict[int, asyncio.Future[Notification]] = {}
        self._ids = itertools.count(1)
        self._task = asyncio.create_task(self._pump())

    async def request(self, action: str, payload: dict[str, Any]) -> Notification:
        """Send a request envelope and return its reply (a response or an error envelope)."""
        id_ = next(self._ids)
        reply = asyncio.get_running_loop().create_future()
        self._replies[id_] = reply
        await self._ws.send(
            json.dumps({"id": id_, "type": "request", "action": action, "payload": payload})
        )
        return await asyncio.wait_for(reply, 60)

    async def only_tasks(self, task_ids: Sequence[str]) -> None:
        """Receive only these tasks' notifications (and their sessions'), as a client watching
        its own tasks does; an empty list receives every notification again."""
        if not task_ids:
            await self.request("unsubscribe", {})
        for task_id in task_ids:
            reply = await self.request("subscribe", {"task_id": task_id})
            if reply["type"] != "response":
                raise RuntimeError(f"subscribe {task_id}: {reply}")

    @classmethod
    async def open(cls, url: str) -> Feed:
        ws = await connect(url, max_size=None, open_timeout=30)
        return cls(ws)

    def expect(
        self, session_id: str, predicate: Predicate
    ) -> asyncio.Future[tuple[float, Notification]]:
        """A future for the next notification about `session_id` matching `predicate`
        (task-level notifications, which name no session, are keyed by their task id)."""
        fut: asyncio.Future[tuple[float, Notification]] = asyncio.get_running_loop().create_future()
        self._waiters[session_id].append(_Waiter(predicate, fut))
        return fut

    async def _pump(self) -> None:
        async for raw in self._ws:
            at = time.perf_counter()
            note = json.loads(raw)
            if note.get("type") != "notification":
                reply = self._replies.pop(note.get("id"), None)
                if reply is not None and not reply.done():
                    reply.set_result(note)
                continue
            payload = note.get("payload") or {}
            sid = payload.get("session_id") or payload.get("task_id")
            waiters = self._waiters.get(sid) if sid else None
            if not waiters:
                continue
            for waiter in list(waiters):
                if waiter.future.done():
                    waiters.remove(waiter)
                elif waiter.predicate(note):
                    waiter.future.set_result((at, note))
                    waiters.remove(waiter)

    async def close(self) -> None:
        self._task.cancel()
        await self._ws.close()


async def wait(
    fut: asyncio.Future[tuple[float, Notification]], limit: float = 60
) -> tuple[float, Notification]:
    return await asyncio.wait_for(fut, limit)


class Api:
    """Thin HTTP helpers over one pooled client."""

    def __init__(
        self, base: str, *, connections: int = 200, follow_redirects: bool = False
    ) -> None:
        """`follow_redirects`: follow a cluster replica's 307 to a session's owner (the
        replicas' `cluster.redirect_to_owner`)."""
        limits = httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=connections,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        )
        self.http = httpx.AsyncClient(
            base_url=base, timeout=60, limits=limits, follow_redirects=follow_redirects
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = await self.http.request(method, path, **kw)
        if response.status_code != status:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else None

    async def create_task(self, title: str = "bench", workspace: str | None = None) -> str:
        """In `workspace` when given (the server creates it), else the default one."""
        task: dict[str, Any] = {"title": title, "description": ""}
        if workspace is not None:
            task["workspace"] = workspace
        body = await self.ok("POST", "/tasks", 201, json=task)
        return str(body["task"]["id"])

    async def start_session(self, task_id: str, prompt: str, agent: str = "builtin") -> str:
        body = await self.ok(
            "POST",
            f"/tasks/{task_id}/task-sessions",
            201,
            json={"agent": agent, "prompt": prompt},
        )
        return str(body["session"]["id"])

    async def prompt(self, session_id: str, text: str) -> None:
        await self.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": text})

    async def respond(self, pending_id: str) -> tuple[float, dict[str, Any]]:
        """POST the answer; returns (seconds to the 200, body)."""
        began = time.perf_counter()
        response = await self.http.post(f"/clarification/{pending_id}/respond", json=ANSWER)
        elapsed = time.perf_counter() - began
        if response.status_code != 200:
            raise RuntimeError(
                f"respond {pending_id}: {response.status_code} {response.text[:500]}"
            )
        return elapsed, response.json()


class RoundRobinApi(Api):
    """`Api` whose every request goes to the next server (a cluster's replicas) in turn."""

    def __init__(self, apis: Sequence[Api]) -> None:
        self._apis = list(apis)
        self._turn = itertools.cycle(self._apis)
        self.http = self._apis[0].http

    @property
    def bases(self) -> list[str]:
        return [str(api.http.base_url) for api in self._apis]

    async def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        return await next(self._turn).ok(method, path, status, **kw)

    async def respond(self, pending_id: str) -> tuple[float, dict[str, Any]]:
        return await next(self._turn).respond(pending_id)

    async def close(self) -> None:
        """The servers' own clients are closed by their owner."""


def api_bases(api: Api) -> list[str]:
    """The base URLs an `Api` sends its requests to, for an `Api` built in another process."""
    return api.bases if isinstance(api, RoundRobinApi) else [str(api.http.base_url)]


async def ask_and_wait(api: Api, feed: Feed, session_id: str, prompt: str = ASK) -> str:
    """Prompt the session and return the pending_id of the question it asks."""
    question = feed.expect(session_id, is_question)
    await api.prompt(session_id, prompt)
    _, note = await wait(question)
    return pending_id_of(note)


async def new_asking_session(
    api: Api, feed: Feed, task_id: str, prompt: str = ASK
) -> tuple[str, str]:
    """Start a session whose first turn asks; returns (session_id, pending_id).

    The session id is only known once the POST returns, so the question is awaited by polling
    the transcript rather than through the feed."""
    session_id = await api.start_session(task_id, prompt)
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        page = await api.ok("GET", f"/task-sessions/{session_id}/messages?limit=100")
        for message in page["messages"]:
            if message["type"] == "clarification_request":
                return session_id, str(message["metadata"]["pending_id"])
        await asyncio.sleep(0.05)
    raise RuntimeError(f"session {session_id} never asked")


async def new_idle_session(api: Api, task_id: str) -> str:
    """Start a session with a plain prompt and wait until the agent has replied to it."""
    session_id = await api.start_session(task_id, "hello")
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        turns = (await api.ok("GET", f"/task-sessions/{session_id}/turns"))["turns"]
        page = await api.ok("GET", f"/task-sessions/{session_id}/messages?limit=100")
        replied = any(m["author_type"] == "agent" for m in page["messages"])
        if replied and turns and all(t["completed_at"] for t in turns):
            return session_id
        await asyncio.sleep(0.05)
    raise RuntimeError(f"session {session_id} never finished its first turn")


async def ask_detaching(api: Api, feed: Feed, session_id: str, seconds: float = 1) -> str:
    """Prompt `/scenario ask-timeout`; returns the pending_id of the question it asked.

    Under load a cold agent's MCP client can give up before the call reaches the server; the
    turn then ends without a question and the prompt is sent again."""
    for _ in range(5):
        question = feed.expect(session_id, is_question)
        ended = feed.expect(session_id, is_turn_completed)
        await api.prompt(session_id, ask_timeout(seconds))
        finished, _ = await asyncio.wait(
            {question, ended}, timeout=120, return_when=asyncio.FIRST_COMPLETED
        )
        if question in finished:
            return pending_id_of(question.result()[1])
        if not finished:
            break
        question.cancel()
    raise RuntimeError(f"session {session_id} never asked")


async def finish_sessions(api: Api, session_ids: Sequence[str]) -> None:
    """End the sessions, all at once, so their agent processes are gone when this returns.

    Each finish waits for its agent process to exit; one at a time (or eight) those waits add
    up: 100 relay sessions took 200 s one by one while each agent still waited out the server's
    stop grace (2 s)."""
    await asyncio.gather(
        *(
            api.ok("POST", f"/task-sessions/{s}/finish", json={"state": "completed"})
            for s in session_ids
        )
    )
