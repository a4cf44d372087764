"""scripts/slack_preview.py draws the blocks Clarion really posts (the screenshots in
docs/notifications.md): every block type has a rendering rule and Slack's mrkdwn is read."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from clarion.slack.blocks import as_dicts, closed_blocks, question_blocks

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slack_preview.py"


def _preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slack_preview", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_preview_draws_the_open_and_the_answered_message() -> None:
    preview = _preview()
    body = preview.message_body()
    open_page = preview.page(as_dicts(question_blocks(body)))
    assert '<a href="https://clarion.example.com/#/tasks/t1/sessions/s1">Billing service</a>' in (
        open_page
    )
    assert "<b>Database</b>" in open_page
    assert open_page.count('class="btn"') == 4 and 'class="btn primary">Answer…' in open_page
    closed = preview.page(as_dicts(closed_blocks(body, "Answered by alice: PostgreSQL")))
    assert "<b>Answered by alice: PostgreSQL</b>" in closed and "<button" not in closed


def test_the_preview_keeps_escaped_text_as_text_and_refuses_unknown_blocks() -> None:
    preview = _preview()
    assert preview.mrkdwn("a &lt;b&gt; &amp; *c*") == "a &lt;b&gt; &amp; <b>c</b>"
    with pytest.raises(ValueError, match="no rendering rule"):
        preview.block_html({"type": "video"})
