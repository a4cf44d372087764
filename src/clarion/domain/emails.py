"""Email notifications: the message for one event, built once when the event is queued, and
the address check the configuration uses. Pure (the standard library's `email` package only).

Headers are set only through `email.message.EmailMessage` with a strict policy, and every text
that comes from an agent or a person (the task title, a question) is folded to one line of
printable characters before it reaches the Subject: a newline in a question can never start a
header of its own. The message is kept ASCII (quoted-printable or base64 bodies, RFC 2047
encoded words), so any SMTP server relays it unchanged.

Markdown in a question is rendered to HTML, with the text part as its plain fallback
(`email_parts`). A question still open carries its answer link, a permission request its
decision link (both signed, no login needed). The messages about one question (or one
permission request) form a thread: the first one's Message-ID is derived from the question's
id, and every later one names it in `In-Reply-To` and `References`.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.errors import HeaderParseError
from email.message import EmailMessage
from email.policy import SMTP
from email.policy import default as STRICT_PARSE
from email.utils import format_datetime, parseaddr
from typing import Any

from clarion.domain.email_parts import (
    chosen_answers,
    expiry_words,
    inline_html,
    inline_text,
    markdown_html,
    markdown_text,
    pre_html,
    tool_preview,
)
from clarion.domain.notification_events import (
    CLARIFICATION_EXPIRED,
    CLARIFICATION_REQUESTED,
    PERMISSION_REQUESTED,
    NotificationFact,
    headline_of,
)

POLICY = SMTP.clone(cte_type="7bit", raise_on_defect=True)
SUBJECT_MAX = 150


def one_line(text: str, limit: int | None = None) -> str:
    """`text` as one line: control characters and every kind of line break become spaces, runs
    of white space one space; cut at `limit` characters with an ellipsis."""
    cleaned = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)
    line = " ".join(cleaned.split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def checked_address(value: Any, where: str) -> str:
    """A configured address (`"Clarion <bot@example.com>"` or `bot@example.com`), or
    ValueError naming `where`. Parsed strictly: `parseaddr` alone reads `a@b c` as `a@bc` and
    `"a@b` as `a@b`, so an address the header parser finds any defect in, a group, or more
    than one address is refused rather than repaired."""
    if not isinstance(value, str) or one_line(value) != value.strip() or not value.strip():
        raise ValueError(f"{where} must be an email address on one line")
    try:
        header = STRICT_PARSE.header_factory("To", value.strip())
        addresses = header.addresses
    except (ValueError, IndexError, TypeError, AttributeError, HeaderParseError) as exc:
        # The header parser itself fails on some malformed input instead of noting a defect.
        raise ValueError(f"{where} must be an email address, got {value!r}") from exc
    grouped = any(group.display_name is not None for group in header.groups)
    if header.defects or grouped or len(addresses) != 1 or "@" not in addresses[0].addr_spec:
        raise ValueError(f"{where} must be an email address, got {value!r}")
    return value.strip()


def envelope_address(configured: str) -> str:
    """The bare address SMTP's envelope needs (`MAIL FROM`, `RCPT TO`)."""
    return parseaddr(configured)[1]


def _headline(fact: NotificationFact) -> str:
    """The event's line with a question's Markdown read as words (`**` gone, links as
    "text (address)"): the subject and the first line show it as text."""
    return inline_text(headline_of(fact))


def subject_of(fact: NotificationFact) -> str:
    """The subject: what happened, naming the task, on one line. An RFC 2047 encoded word in
    the text (`=?utf-8?q?...=0D=0A...?=`) is broken up: the email package would decode it, and
    the line break inside would reach the header."""
    return one_line(f"[Clarion] {_headline(fact)}", SUBJECT_MAX).replace("=?", "= ?")


def _options(question: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(label, description, whether it is the default) of each option, Markdown as written."""
    return [
        (
            str(o.get("label") or o.get("option_id") or ""),
            str(o.get("description") or ""),
            o.get("default") is True,
        )
        for o in question.get("options") or []
    ]


def _chosen(fact: NotificationFact) -> list[tuple[str, str]]:
    if fact.response is None:
        return []
    return chosen_answers(
        fact.questions or (), fact.response, by_policy=fact.event == CLARIFICATION_EXPIRED
    )


def _chosen_heading(fact: NotificationFact) -> str:
    return "The expiry policy chose" if fact.event == CLARIFICATION_EXPIRED else "Chosen"


def _deadline(fact: NotificationFact, answer_url: str | None) -> str | None:
    """ "Answer by 2026-12-07 14:05 UTC. If no one answers by then, the agent gets the default
    answer: SQLite." for an open question with a deadline (None otherwise)."""
    if fact.expires_at is None or answer_url is None:
        return None
    return f"Answer by {fact.expires_at:%Y-%m-%d %H:%M %Z}. " + expiry_words(
        fact.questions or (), fact.on_expiry
    )


def _text_body(
    fact: NotificationFact, link: str, answer_url: str | None, decision_url: str | None = None
) -> str:
    lines = [_headline(fact), ""]
    deadline = _deadline(fact, answer_url)
    if deadline:
        lines += [deadline, ""]
    chosen = _chosen(fact)
    if chosen:
        lines.append(f"{_chosen_heading(fact)}:")
        lines += [f"- {name}: {words}" for name, words in chosen]
        lines.append("")
    for number, question in enumerate(fact.questions or (), start=1):
        title = inline_text(str(question.get("title") or ""))
        prompt = markdown_text(str(question.get("prompt") or ""))
        lines.append(
            f"{number}. {title}: {prompt}" if title and title != prompt else f"{number}. {prompt}"
        )
        for label, description, default in _options(question):
            words = inline_text(label) + (" (default)" if default else "")
            lines.append(f"   - {words}" + (f": {inline_text(description)}" if description else ""))
        lines.append("")
    preview = tool_preview(fact.tool_call) if fact.tool_call else None
    if preview is not None:
        lines += [f"{preview[0]}:", preview[1], ""]
    if answer_url:
        lines += ["Answer here (no login needed):", answer_url, ""]
    if decision_url:
        lines += ["Decide here (no login needed):", decision_url, ""]
    lines += ["Open in Clarion:", link, ""]
    return "\n".join(lines)


def _link_button(url: str, words: str) -> str:
    e = html.escape
    return (
        f'<p style="margin:20px 0"><a href="{e(url)}" style="display:inline-block;'
        "background:#2f5bea;color:#fff;text-decoration:none;font-weight:600;"
        f'padding:14px 22px;border-radius:10px">{e(words)}</a></p>'
        '<p style="color:#5b6474;font-size:14px;margin:0 0 8px;word-break:break-all">'
        "No login needed. Or copy "
        f"this link: {e(url)}</p>"
    )


def _html_body(
    fact: NotificationFact, link: str, answer_url: str | None, decision_url: str | None = None
) -> str:
    e = html.escape
    parts = [
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        '<body style="margin:0;padding:16px;font-family:system-ui,-apple-system,Segoe UI,'
        'Roboto,sans-serif;font-size:16px;line-height:1.45;color:#1d2330">'
        '<div style="max-width:600px;margin:0 auto">',
        f'<p style="font-size:18px;font-weight:600;margin:0 0 16px">{e(_headline(fact))}</p>',
    ]
    deadline = _deadline(fact, answer_url)
    if deadline:
        parts.append(f'<p style="margin:0 0 12px;color:#b54708;font-weight:600">{e(deadline)}</p>')
    chosen = _chosen(fact)
    if chosen:
        items = "".join(
            f"<li>{e(name)}: <strong>{e(words)}</strong></li>" for name, words in chosen
        )
        parts.append(
            '<div style="border:1px solid #067647;background:#ecfdf3;border-radius:10px;'
            f'padding:12px;margin:0 0 12px"><p style="margin:0 0 4px;font-weight:600">'
            f"{e(_chosen_heading(fact))}</p>"
            f'<ul style="margin:0;padding-left:20px">{items}</ul></div>'
        )
    for question in fact.questions or ():
        title = str(question.get("title") or "")
        prompt = str(question.get("prompt") or "")
        parts.append(
            '<div style="border:1px solid #d9dde5;border-radius:10px;padding:12px;margin:0 0 12px">'
        )
        if title and title != prompt:
            parts.append(f'<p style="margin:0 0 4px;font-weight:600">{inline_html(title)}</p>')
        parts.append(f'{markdown_html(prompt)}<ul style="margin:0;padding-left:20px">')
        for label, description, default in _options(question):
            more = (
                f' <span style="color:#5b6474">{inline_html(description)}</span>'
                if description
                else ""
            )
            mark = (
                ' <span style="color:#067647;font-weight:600">(default)</span>' if default else ""
            )
            parts.append(f"<li>{inline_html(label)}{mark}{more}</li>")
        parts.append("</ul></div>")
    preview = tool_preview(fact.tool_call) if fact.tool_call else None
    if preview is not None:
        parts.append(
            f'<p style="margin:0 0 4px;font-weight:600">{e(preview[0])}</p>{pre_html(preview[1])}'
        )
    if answer_url:
        parts.append(_link_button(answer_url, "Answer now"))
    if decision_url:
        parts.append(_link_button(decision_url, "Decide now"))
    parts.append(
        f'<p style="font-size:14px;margin:16px 0 0"><a href="{e(link)}">Open in Clarion</a></p>'
        "</div></body></html>"
    )
    return "\n".join(parts)


def email_message(
    fact: NotificationFact,
    *,
    delivery_id: str,
    occurred_at: datetime,
    sender: str,
    to: Sequence[str],
    link: str,
    answer_url: str | None,
    decision_url: str | None = None,
) -> str:
    """The whole message (headers and a text/plain + text/html body), ASCII, CRLF line ends.
    Its Message-ID is derived from the delivery id, so a resent delivery keeps it."""
    message = EmailMessage(policy=POLICY)
    message["Subject"] = subject_of(fact)
    if one_line(str(message["Subject"])) != str(message["Subject"]):
        raise ValueError("a subject must stay on one line")  # never sent, never reached
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(occurred_at)
    domain = envelope_address(sender).rpartition("@")[2] or "clarion.invalid"
    root = thread_root(fact, domain)
    if root is not None and fact.event in _THREAD_STARTERS:
        message["Message-ID"] = root
    else:
        message["Message-ID"] = f"<{delivery_id}@{domain}>"
        if root is not None:
            message["In-Reply-To"] = root
            message["References"] = root
    message["Auto-Submitted"] = "auto-generated"
    message["X-Clarion-Event"] = fact.event
    message.set_content(_text_body(fact, link, answer_url, decision_url))
    message.add_alternative(_html_body(fact, link, answer_url, decision_url), subtype="html")
    return message.as_string()


# The events that open a thread: a question asked, a permission requested.
_THREAD_STARTERS = frozenset({CLARIFICATION_REQUESTED, PERMISSION_REQUESTED})


def thread_root(fact: NotificationFact, domain: str) -> str | None:
    """The Message-ID of the first message about the fact's question or permission request
    (the one its `requested` event sent), or None for a fact about neither. Derived, not
    looked up: each question is asked once, so its id names that message alone."""
    if fact.pending_id is not None:
        return f"<question.{fact.pending_id}@{domain}>"
    if fact.message_id is not None and fact.tool_call is not None:
        return f"<permission.{fact.message_id}@{domain}>"
    return None


@dataclass(frozen=True, slots=True)
class MailTarget:
    """Where one workspace's email notifications go, as the outbox needs it: the channel's key
    (the outbox row's destination), the events it wants, the sender and the recipients."""

    key: str
    events: frozenset[str]
    sender: str
    to: tuple[str, ...]
