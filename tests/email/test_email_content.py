"""What the emails say, read from a real SMTP server on loopback (aiosmtpd), on both
databases: a question's Markdown rendered to HTML beside a plain-text part; the Answered and
Skipped emails say what was chosen; every message about one question replies to the first
(`In-Reply-To`/`References`); a permission email shows the command and a decision link that
decides it; and a restart's detachments send no email (each question stays answerable through
its first email's link)."""

from __future__ import annotations

import asyncio
from typing import Any

from clarion.domain import lifecycle
from clarion.ports import PermissionAsk
from tests.email.smtp import Mailbox
from tests.email.test_email_delivery import _channel, _wait, mailing
from tests.lifecycle.harness import SKIP, answer_db
from tests.ports import free_port

EVENTS = frozenset(
    {
        "clarification.requested",
        "clarification.answered",
        "clarification.detached",
        "permission.requested",
    }
)
MARKDOWN_ASK = {
    "questions": [
        {
            "id": "db",
            "title": "Database",
            "prompt": "Which **database**? See [the notes](https://example.com/notes).",
            "options": [
                {"option_id": "postgres", "label": "**PostgreSQL**", "description": "`pg`"},
                {"option_id": "sqlite", "label": "SQLite", "default": True},
            ],
        }
    ]
}


async def test_a_question_renders_markdown_and_its_answer_says_what_was_chosen_in_its_thread(
    store_url: str,
) -> None:
    mailbox = Mailbox(free_port())
    with mailbox.running():
        async with mailing(store_url, _channel(mailbox.port, events=EVENTS)) as rig:
            _, session_id = await rig.life.start_session()
            call, pending_id = await rig.life.ask(session_id, MARKDOWN_ASK)
            [asked] = await _wait(mailbox, 1)
            html, text = asked.body("html"), asked.body("plain")
            assert "<strong>database</strong>" in html
            assert '<a href="https://example.com/notes">the notes</a>' in html
            assert "<strong>PostgreSQL</strong>" in html and "**" not in text
            assert "the notes (https://example.com/notes)" in text
            assert "SQLite (default)" in text

            token = await rig.link_for(pending_id)
            answered = await rig.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
            assert answered.status_code == 200, answered.text
            await asyncio.wait_for(call, 60)
            [_, done] = await _wait(mailbox, 2)
            assert "Chosen:" in done.body("plain")
            assert "Database: PostgreSQL" in done.body("plain")
            assert "<strong>PostgreSQL</strong>" in done.body("html")
            assert done.message["In-Reply-To"] == asked.message_id
            assert done.message["References"] == asked.message_id
            assert done.message_id != asked.message_id


async def test_a_skipped_email_says_it_was_skipped(store_url: str) -> None:
    mailbox = Mailbox(free_port())
    with mailbox.running():
        async with mailing(store_url, _channel(mailbox.port, events=EVENTS)) as rig:
            _, session_id = await rig.life.start_session()
            call, pending_id = await rig.life.ask(session_id)
            token = await rig.link_for(pending_id)
            skipped = await rig.http.post(f"/api/v1/a/{token}/respond", json=SKIP)
            assert skipped.status_code == 200, skipped.text
            await asyncio.wait_for(call, 60)
            [_, done] = await _wait(mailbox, 2)
            assert done.message["Subject"].startswith("[Clarion] Skipped in")
            assert "Skipped: User skipped" in done.body("plain")


async def test_a_permission_email_shows_the_command_and_its_decision_link_decides_it(
    store_url: str,
) -> None:
    mailbox = Mailbox(free_port())
    with mailbox.running():
        async with mailing(store_url, _channel(mailbox.port, events=EVENTS)) as rig:
            _, session_id = await rig.life.start_session()
            ask = PermissionAsk(
                session_id,
                "c1",
                "Execute README.md",
                "execute",
                {"command": "cat README.md"},
                (("allow", "Allow", "allow_once"), ("reject", "Reject", "reject_once")),
            )
            waiting = asyncio.create_task(rig.life.runtime.sink.on_permission(ask))
            [mail] = await _wait(mailbox, 1)
            assert mail.message["X-Clarion-Event"] == "permission.requested"
            plain = mail.body("plain").replace("\r\n", "\n")
            assert "Command:\ncat README.md" in plain
            assert "cat README.md</pre>" in mail.body("html")
            assert "Decide here (no login needed):\nhttps://clarion.example/p/" in plain
            url = plain.split("Decide here (no login needed):\n", 1)[1].split("\n", 1)[0]
            assert f'href="{url}"' in mail.body("html") and "Decide now" in mail.body("html")
            token = url.rsplit("/p/", 1)[1]
            decided = await rig.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "allow"})
            assert decided.status_code == 200, decided.text
            assert await asyncio.wait_for(waiting, 10) == "allow"


async def test_a_restart_detaching_every_question_sends_no_email(store_url: str) -> None:
    mailbox = Mailbox(free_port())
    with mailbox.running():
        async with mailing(store_url, _channel(mailbox.port, events=EVENTS)) as rig:
            calls: list[Any] = []
            for _ in range(3):
                _, session_id = await rig.life.start_session()
                call, _ = await rig.life.ask(session_id)
                calls.append(call)
            await _wait(mailbox, 3)
            detached = await rig.life.app.stores.recovery.transition_all_bundles(lifecycle.DETACH)
            assert len(detached) == 3
            # The detachments are queued for webhooks only; a later event's email arrives
            # alone, so none was sent for them.
            _, later = await rig.life.start_session()
            late_call, _ = await rig.life.ask(later)
            received = await _wait(mailbox, 4)
            events = [m.message["X-Clarion-Event"] for m in mailbox.received]
            assert events.count("clarification.detached") == 0, events
            assert len(received) == 4
            for pending in (*calls, late_call):
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
