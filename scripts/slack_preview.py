"""Render the Slack message Clarion posts for a question, and the same message once answered,
into docs/slack-message.png and docs/slack-message-answered.png.

The blocks are the real ones (`clarion.slack.blocks`, from the built-in agent's `db` question);
the page draws them with Slack's published Block Kit rules approximated: a section's mrkdwn
(`*bold*`, `<url|text>` links, escaped `&<>`), a context block's small grey text, an actions
block's buttons (outlined, the primary one green). Slack's own client is the real renderer;
this is a faithful sketch of the layout, not a pixel copy. Needs /usr/bin/chromium (Playwright).

    .venv/bin/python scripts/slack_preview.py
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from clarion.agents.scenario_questions import MULTI_CONTEXT, ask_arguments
from clarion.slack.blocks import as_dicts, closed_blocks, question_blocks

ROOT = Path(__file__).resolve().parents[1]
STYLE = """
body { margin: 0; background: #fff; font-family: Lato, 'Helvetica Neue', Arial, sans-serif;
       font-size: 15px; line-height: 1.46668; color: #1d1c1d; }
.msg { display: flex; gap: 8px; padding: 16px 20px; width: 640px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #2f5bea; color: #fff;
          font-weight: 900; display: flex; align-items: center; justify-content: center; }
.who { font-weight: 900; } .app { font-size: 10px; font-weight: 700; color: #616061;
       background: rgba(29,28,29,.13); border-radius: 2px; padding: 0 3px; margin-left: 4px; }
.time { color: #616061; font-size: 12px; margin-left: 6px; }
.section { margin: 4px 0; white-space: pre-wrap; }
.context { color: #616061; font-size: 13px; margin: 4px 0; white-space: pre-wrap; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0 4px; }
.btn { height: 28px; padding: 0 12px; border: 1px solid rgba(29,28,29,.3); border-radius: 4px;
       background: #fff; font: 700 13px Lato, 'Helvetica Neue', Arial, sans-serif; color: #1d1c1d; }
.btn.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
a { color: #1264a3; text-decoration: none; }
"""


def mrkdwn(text: str) -> str:
    """Slack's mrkdwn subset the blocks use, as HTML (the text is already escaped for Slack)."""
    text = text.replace("&lt;", "\0lt").replace("&gt;", "\0gt").replace("&amp;", "\0amp")
    text = re.sub(r"<([^|>]+)\|([^>]+)>", lambda m: f"\x01{m[1]}\x02{m[2]}\x03", text)
    text = html.escape(text)
    text = re.sub(r"\x01([^\x02]+)\x02([^\x03]+)\x03", r'<a href="\1">\2</a>', text)
    text = re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", text)
    return text.replace("\0lt", "&lt;").replace("\0gt", "&gt;").replace("\0amp", "&amp;")


def block_html(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "section":
        return f'<div class="section">{mrkdwn(block["text"]["text"])}</div>'
    if kind == "context":
        return "".join(f'<div class="context">{mrkdwn(e["text"])}</div>' for e in block["elements"])
    if kind == "actions":
        buttons = "".join(
            f'<button class="btn{" primary" if e.get("style") == "primary" else ""}">'
            f"{html.escape(e['text']['text'])}</button>"
            for e in block["elements"]
        )
        return f'<div class="actions">{buttons}</div>'
    raise ValueError(f"no rendering rule for a {kind} block")


def page(blocks: list[dict[str, Any]]) -> str:
    body = "".join(block_html(b) for b in blocks)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
        '<div class="msg"><div class="avatar">C</div><div>'
        '<div><span class="who">Clarion</span><span class="app">APP</span>'
        f'<span class="time">10:42 AM</span></div>{body}</div></div></body></html>'
    )


def message_body() -> dict[str, Any]:
    return {
        "task": {"id": "t1", "title": "Billing service"},
        "pending_id": "01a2f0c4",
        "link": "https://clarion.example.com/#/tasks/t1/sessions/s1",
        "answer_url": "https://clarion.example.com/a/token",
        "context": MULTI_CONTEXT.split(":")[0] + ".",
        "questions": ask_arguments()["questions"],
    }


def main() -> int:
    body = message_body()
    shots = {
        "slack-message.png": as_dicts(question_blocks(body)),
        "slack-message-answered.png": as_dicts(
            closed_blocks(body, "Answered by alice: PostgreSQL")
        ),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
        )
        try:
            for name, blocks in shots.items():
                tab = browser.new_page(viewport={"width": 700, "height": 300})
                tab.set_content(page(blocks))
                tab.locator(".msg").screenshot(path=str(ROOT / "docs" / name))
                tab.close()
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
