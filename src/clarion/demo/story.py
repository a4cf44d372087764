"""The demo's story in three acts, told as it happens.

1. A live question: the built-in agent asks, the answer goes over HTTP, the agent goes on in
   the same turn and replies `You answered: ...`.
2. A question that detaches: the agent stops waiting, the server is killed and started again
   on the same database, and the answer resumes the agent in a new turn.
3. A stale answer: answering the same question again is refused with 409, nothing written.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.text import Text

from clarion.client.errors import EXIT_SERVER_ERROR, CliError, api_error, describe_response
from clarion.client.http import ClarionClient
from clarion.client.render import question_block
from clarion.client.sanitize import safe
from clarion.demo.servers import DemoServer

T = TypeVar("T")
RESUME_MARK = "You previously asked the user:"


class Story:
    def __init__(self, console: Console, server: DemoServer, client: ClarionClient) -> None:
        self.console = console
        self.server = server
        self.client = client
        self.started = time.monotonic()

    # ------------------------------------------------------------------ telling

    def act(self, number: int, title: str) -> None:
        self.console.print()
        self.console.rule(Text(f"[{number}/3] {title}", style="bold"), align="left")

    def done(self, what: str | Text) -> None:
        elapsed = time.monotonic() - self.started
        line = Text(f"  ✓ {elapsed:5.1f}s  ", style="green")
        line.append(what if isinstance(what, Text) else Text(safe(what), style="default"))
        self.console.print(line)

    def show(self, text: str | Text) -> None:
        body = text if isinstance(text, Text) else Text(safe(text))
        for line in body.split("\n"):
            self.console.print(Text(" " * 12) + line)

    def wait(self, what: str, probe: Callable[[], T | None], timeout: float = 30.0) -> T:
        with self.console.status(f"waiting for {what}…"):
            deadline = time.monotonic() + timeout
            while True:
                value = probe()
                if value:
                    return value
                if time.monotonic() > deadline:
                    raise CliError(f"timed out waiting for {what}", EXIT_SERVER_ERROR)
                time.sleep(0.05)

    # ------------------------------------------------------------------ probes

    def question_of(self, session_id: str) -> str | None:
        for message in self.client.messages(session_id):
            if message["type"] == "clarification_request":
                return str(message["metadata"]["pending_id"])
        return None

    def agent_text(self, session_id: str, needle: str) -> str | None:
        for message in self.client.messages(session_id):
            is_reply = message["author_type"] == "agent" and message["type"] == "message"
            if is_reply and needle in message["content"]:
                return str(message["content"])
        return None

    def in_state(self, pending_id: str, state: str) -> dict[str, Any] | None:
        bundle = self.client.bundle(pending_id)
        return bundle if bundle["state"] == state else None

    # ------------------------------------------------------------------ acts

    def ask(self, title: str, prompt: str) -> tuple[str, str]:
        task = self.client.create_task(title, prompt)
        session = self.client.start_session(task["id"], agent="builtin", prompt=prompt)
        self.done(f"task {task['id']} created; session on the built-in agent: {prompt!r}")
        pending_id = self.wait("the agent's question", lambda: self.question_of(session["id"]))
        return session["id"], pending_id

    def live_question(self) -> None:
        self.act(1, "A live question")
        session_id, pending_id = self.ask("Demo: a live question", "/scenario ask")
        bundle = self.wait("the live waiter", lambda: self.in_state(pending_id, "active_live"))
        self.done(f"the agent asked (bundle {pending_id}, state active_live):")
        self.show(question_block(1, 1, bundle["questions"][0]))
        result = self.client.respond(pending_id, _answer("postgres"))
        self.done(
            f"answered over HTTP: {describe_response(result['response'])} "
            f"(resumed: {str(result['resumed']).lower()}; same turn)"
        )
        reply = self.wait("the agent's reply", lambda: self.agent_text(session_id, "You answered:"))
        self.done(Text(safe(f"the agent replied: {reply}")))

    def detached_question(self) -> str:
        self.act(2, "A question that outlives the server")
        session_id, pending_id = self.ask(
            "Demo: an answer after a restart", "/scenario ask-timeout t=1"
        )
        self.wait(
            "the agent to give up waiting",
            lambda: self.agent_text(session_id, "No answer yet; ending turn."),
        )
        self.wait("the bundle to detach", lambda: self.in_state(pending_id, "active_detached"))
        self.done(
            "the agent stopped waiting and ended its turn; the question stays open "
            "(state active_detached)"
        )
        self.server.kill()
        self.done("server killed (SIGKILL, no shutdown code ran)")
        with self.console.status("restarting clarion serve on the same database…"):
            self.server.start()
        state = self.client.bundle(pending_id)["state"]
        self.done(f"server restarted; the question is still answerable (state {state})")
        result = self.client.respond(pending_id, _answer("sqlite"))
        if not result.get("resumed"):
            raise CliError(f"expected the answer to resume the agent, got {result}")
        self.done(
            f"answered: {describe_response(result['response'])} -> resumed: true, "
            f"successor turn {result['successor_turn_id']}"
        )
        reply = self.wait(
            "the agent's reply to the resume prompt",
            lambda: self.agent_text(session_id, RESUME_MARK),
        )
        self.done("the agent received the answer as a new prompt and replied:")
        for line in reply.splitlines():
            self.show(line)
        return pending_id

    def stale_answer(self, pending_id: str) -> None:
        self.act(3, "A stale answer")
        response = self.client.call_raw(
            "POST", f"/clarification/{pending_id}/respond", json=_answer("mongodb")
        )
        if response.status_code != 409:
            raise CliError(
                f"expected 409 for a second answer, got {response.status_code}: {response.text}"
            )
        error = api_error(response.status_code, response.text, "second answer")
        self.done("a second answer (mongodb) to the same question: HTTP 409")
        self.show(error.message)
        for line in error.details:
            self.show(line)


def _answer(option: str) -> dict[str, Any]:
    return {
        "answers": [{"question_id": "db", "selected_options": [option], "custom_text": ""}],
        "rejected": False,
        "reject_reason": "",
    }


def run_demo(console: Console) -> int:
    """Play the story; 0 when every act behaved as the lifecycle promises, else 1."""
    with tempfile.TemporaryDirectory(prefix="clarion-demo-") as tmp:
        server = DemoServer(Path(tmp))
        client = ClarionClient(server.url)
        story = Story(console, server, client)
        try:
            console.print(Text("Clarion demo: the built-in agent asks, you answer.", style="bold"))
            with console.status("starting clarion serve on a temporary database…"):
                server.start()
            story.done(f"server ready at {server.url} (database {server.database_url})")
            story.live_question()
            pending_id = story.detached_question()
            story.stale_answer(pending_id)
        except CliError as error:
            console.print(Text(safe(f"demo failed: {error.message}"), style="bold red"))
            for line in (*error.details, *server.log_tail()):
                console.print(Text(safe(f"  {line}"), style="red"))
            return error.exit_code or 1
        finally:
            client.close()
            server.stop()
        console.print()
        console.print(
            Text(
                f"Demo finished in {time.monotonic() - story.started:.1f}s: every act "
                "behaved as promised.",
                style="bold green",
            )
        )
        return 0
