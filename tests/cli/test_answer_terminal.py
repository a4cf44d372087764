"""`clarion answer` in a real pseudo-terminal: numbered options, free text, Skip, re-prompts."""

from __future__ import annotations

import pytest

from tests.cli.cli_runner import Terminal, cli, pending_of
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.e2e


def _answer(server: ServerProcess, pending_id: str) -> Terminal:
    return Terminal(cli("answer", pending_id, "--server", server.url))


def test_picking_an_option_number_answers_the_live_question(shared_server: ServerProcess) -> None:
    _, session_id, pending_id = pending_of(shared_server, "/scenario ask")
    term = _answer(shared_server, pending_id)
    try:
        term.expect("3) SQLite")
        term.expect("> ")
        term.send("3")
        assert term.wait() == 0, term.output
    finally:
        term.close()
    assert "Answered: db: sqlite" in term.output
    assert '"selected_options": ["sqlite"]' in shared_server.wait_for_agent_text(
        session_id, "You answered:"
    )


def test_each_question_takes_numbers_or_text_and_bad_numbers_are_asked_again(
    shared_server: ServerProcess,
) -> None:
    _, session_id, pending_id = pending_of(shared_server, "/scenario ask-multi")
    term = _answer(shared_server, pending_id)
    try:
        term.expect("Question 1/3 [db]")
        term.expect("> ")
        term.send("9")
        term.expect("No such option number")
        term.send("2")
        term.expect("Question 2/3 [language]")
        term.send("whatever compiles fastest")
        term.expect("Question 3/3 [deploy]")
        term.send("1")
        assert term.wait() == 0, term.output
    finally:
        term.close()
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert '"db": {"selected_options": ["mongodb"]' in reply
    assert '"custom_text": "whatever compiles fastest"' in reply
    assert '"deploy": {"selected_options": ["docker"]' in reply


def test_typing_s_skips_the_whole_bundle(shared_server: ServerProcess) -> None:
    _, _, pending_id = pending_of(shared_server, "/scenario ask")
    term = _answer(shared_server, pending_id)
    try:
        term.expect("> ")
        term.send("s")
        assert term.wait() == 0, term.output
    finally:
        term.close()
    assert "Skipped: User skipped" in term.output
    rows = shared_server.bundle(pending_id)["rows"]
    assert [r["metadata"]["status"] for r in rows] == ["rejected"]


def test_an_answered_bundle_is_refused_before_any_prompt(shared_server: ServerProcess) -> None:
    _, _, pending_id = pending_of(shared_server, "/scenario ask")
    first = {"answers": [{"question_id": "db", "selected_options": ["postgres"]}]}
    assert shared_server.respond(pending_id, {**first, "rejected": False}).is_success
    term = _answer(shared_server, pending_id)
    try:
        assert term.wait() == 4, term.output
    finally:
        term.close()
    assert "can no longer be answered (state terminal)" in term.output
    assert "the answer that won: db: postgres" in term.output
    assert "> " not in term.output
