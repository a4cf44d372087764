"""Pieces of an email's body, each as HTML and as plain text: Markdown (the same small subset
and link rule as the web UI's renderer, web/js/markdown.js), the answer that was chosen, and
what a permission request would do (its command, its change as a diff, its address). Pure (the
standard library only).

Text never becomes markup: every piece of text is escaped, and a link is kept only for http(s)
and mailto addresses, as in the web UI. The plain-text form keeps the words and gives a link's
address in brackets, so a mail client without HTML still shows where it leads.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Mapping
from typing import Any

_SAFE_HREF = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)
# Inline code, bold, italic (* or _), a link; the first match wins (as in markdown.js).
_INLINE = re.compile(
    r"`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])"
    r"|\[([^\]]+)\]\(([^)\s]+)\)"
)
_CODE_STYLE = "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:14px"
_PRE_STYLE = (
    f"{_CODE_STYLE};background:#f2f4f7;border-radius:6px;padding:8px;margin:0 0 8px;"
    "white-space:pre-wrap;word-break:break-word"
)
DIFF_LINE_LIMIT = 200
RAW_LIMIT = 2000


def _inline(text: str, as_html: bool) -> str:
    out: list[str] = []
    rest = text
    while rest:
        m = _INLINE.search(rest)
        if m is None:
            out.append(html.escape(rest) if as_html else rest)
            break
        before = rest[: m.start()]
        out.append(html.escape(before) if as_html else before)
        code, strong, em, label, href = (
            m.group(1),
            m.group(2) or m.group(3),
            m.group(4) or m.group(5),
            m.group(6),
            m.group(7),
        )
        if code is not None:
            out.append(
                f'<code style="{_CODE_STYLE}">{html.escape(code)}</code>' if as_html else code
            )
        elif strong is not None:
            out.append(f"<strong>{html.escape(strong)}</strong>" if as_html else strong)
        elif em is not None:
            out.append(f"<em>{html.escape(em)}</em>" if as_html else em)
        elif label is not None and _SAFE_HREF.match(href):
            out.append(
                f'<a href="{html.escape(href)}">{html.escape(label)}</a>'
                if as_html
                else f"{label} ({href})"
            )
        else:
            out.append(html.escape(m.group(0)) if as_html else m.group(0))
        rest = rest[m.end() :]
    return "".join(out)


def inline_html(text: str) -> str:
    """One line of Markdown (an option's label) as escaped HTML."""
    return _inline(" ".join(text.split()), True)


def inline_text(text: str) -> str:
    """One line of Markdown as plain words (a link's address in brackets)."""
    return _inline(" ".join(text.split()), False)


def _blocks(source: str) -> list[tuple[str, Any]]:
    """Paragraphs, headings, lists and code blocks, as in markdown.js's `parseMarkdown`."""
    blocks: list[tuple[str, Any]] = []
    para: list[str] = []
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")

    def flush() -> None:
        if para:
            blocks.append(("p", "\n".join(para)))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*```", line):
            flush()
            code: list[str] = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```", lines[i]):
                code.append(lines[i])
                i += 1
            blocks.append(("code", "\n".join(code)))
        elif heading := re.match(r"^(#{1,6})\s+(.*)$", line):
            flush()
            blocks.append(("h", heading.group(2)))
        elif item := re.match(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$", line):
            flush()
            kind = "ol" if re.match(r"^\s*\d", line) else "ul"
            last = blocks[-1] if blocks else None
            if last is not None and last[0] == kind and lines[i - 1].strip():
                last[1].append(item.group(1))
            else:
                blocks.append((kind, [item.group(1)]))
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return blocks


def markdown_html(source: str) -> str:
    """A Markdown text as escaped HTML with inline styles (mail clients drop style sheets)."""
    parts: list[str] = []
    for kind, value in _blocks(source):
        if kind == "code":
            parts.append(f'<pre style="{_PRE_STYLE}">{html.escape(value)}</pre>')
        elif kind in ("ul", "ol"):
            items = "".join(f"<li>{_inline(item, True)}</li>" for item in value)
            parts.append(f'<{kind} style="margin:0 0 8px;padding-left:20px">{items}</{kind}>')
        elif kind == "h":
            parts.append(f'<p style="margin:0 0 8px;font-weight:600">{_inline(value, True)}</p>')
        else:
            text = _inline(value, True).replace("\n", "<br>")
            parts.append(f'<p style="margin:0 0 8px">{text}</p>')
    return "".join(parts)


def markdown_text(source: str) -> str:
    """A Markdown text as plain text: the words, lists as lines, code as it is."""
    parts: list[str] = []
    for kind, value in _blocks(source):
        if kind == "code":
            parts.append("\n".join(f"    {line}" for line in value.split("\n")))
        elif kind in ("ul", "ol"):
            parts.append("\n".join(f"- {_inline(item, False)}" for item in value))
        else:
            parts.append(_inline(value, False))
    return "\n\n".join(parts)


def chosen_answers(
    questions: tuple[Mapping[str, Any], ...], response: Mapping[str, Any], by_policy: bool
) -> list[tuple[str, str]]:
    """(question, what was chosen) for each question, in words: option labels (", the
    default" when the expiry policy chose it) and the person's own text."""
    if response.get("rejected"):
        reason = str(response.get("reject_reason") or "").strip()
        return [("All questions", f"Skipped{f': {reason}' if reason else ''}")]
    by_id = {str(q.get("id")): q for q in questions}
    chosen: list[tuple[str, str]] = []
    for answer in response.get("answers") or ():
        question = by_id.get(str(answer.get("question_id")), {})
        options = {str(o.get("option_id")): o for o in question.get("options") or ()}
        words = []
        for option_id in answer.get("selected_options") or ():
            option = options.get(str(option_id), {})
            label = inline_text(str(option.get("label") or option_id))
            words.append(f"{label}, the default" if by_policy and option.get("default") else label)
        custom = str(answer.get("custom_text") or "").strip()
        if custom:
            words.append(f"“{custom}”")
        name = str(question.get("title") or question.get("prompt") or answer.get("question_id"))
        chosen.append((inline_text(name), ", ".join(words) or "no answer"))
    return chosen


def expiry_words(questions: tuple[Mapping[str, Any], ...], on_expiry: str) -> str:
    """What happens at the deadline, in words, naming the default options."""
    if on_expiry == "default":
        defaults = [
            inline_text(str(o.get("label") or o.get("option_id")))
            for q in questions
            for o in q.get("options") or ()
            if o.get("default") is True
        ]
        named = f": {', '.join(defaults)}" if defaults else ""
        return f"If no one answers by then, the agent gets the default answer{named}."
    if on_expiry == "skip":
        return "If no one answers by then, the question is skipped."
    return "The question stays open after it."


def _field(raw: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = raw.get(name)
        if isinstance(value, str):
            return value
    return None


def _diff(path: str, before: str, after: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=2
        )
    )
    if len(lines) > DIFF_LINE_LIMIT:
        lines = [*lines[:DIFF_LINE_LIMIT], f"… {len(lines) - DIFF_LINE_LIMIT} more lines"]
    return "\n".join(lines)


def tool_preview(tool_call: Mapping[str, Any]) -> tuple[str, str] | None:
    """What a permission request would do, as (what it is, its text): the command line of an
    execute, the change to a file as a unified diff, the address of a fetch, or the raw input
    as JSON (cut); None when the request carries none. As the web UI's permission preview."""
    content = tool_call.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "diff":
                new = part.get("newText")
                if isinstance(new, str):
                    path = str(part.get("path") or "")
                    return "Change", _diff(path, str(part.get("oldText") or ""), new)
    raw = tool_call.get("raw_input")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        text = raw if isinstance(raw, str) else json.dumps(raw, indent=2, ensure_ascii=False)
        return "Input", text[:RAW_LIMIT]
    path = _field(raw, ("path", "file_path", "filePath", "file")) or ""
    after = _field(raw, ("new_string", "newText", "new_text", "new_str"))
    if after is not None:
        before = _field(raw, ("old_string", "oldText", "old_text", "old_str")) or ""
        return "Change", _diff(path, before, after)
    written = _field(raw, ("content", "contents", "text"))
    if written is not None and path:
        return "New content", _diff(path, "", written)
    command = raw.get("command", raw.get("cmd"))
    if isinstance(command, list):
        command = " ".join(
            json.dumps(str(p)) if re.search(r"[\s\"']", str(p)) else str(p) for p in command
        )
    if isinstance(command, str):
        cwd = _field(raw, ("cwd", "workdir", "working_directory"))
        return "Command", f"{command}\n(in {cwd})" if cwd else command
    url = _field(raw, ("url", "uri"))
    if url is not None:
        return "Address", url
    return "Input", json.dumps(raw, indent=2, ensure_ascii=False, default=str)[:RAW_LIMIT]


def pre_html(text: str) -> str:
    return f'<pre style="{_PRE_STYLE}">{html.escape(text)}</pre>'
