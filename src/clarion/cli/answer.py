"""`clarion answer PENDING_ID`: answer or Skip a question bundle, interactively or with flags.

Interactive when no answer flag is given and stdin is a terminal: each question is shown with
numbered options, and the person types option numbers, free text, or `s` to Skip. The server
decides whether the answer still counts (it answers 409 when it does not).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.client.errors import EXIT_CONFLICT, EXIT_USAGE, CliError, describe_response
from clarion.client.render import question_block, stdout
from clarion.client.sanitize import safe

ACTIVE_STATES = ("active_live", "active_detached")
DEFAULT_REASON = "User skipped"
SKIP_WORDS = frozenset({"s", "skip"})


def answer(
    pending_id: Annotated[str, typer.Argument(help="The question bundle's pending id")],
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="QID=OPTION (option id, label or number); repeatable"),
    ] = None,
    text: Annotated[
        list[str] | None, typer.Option("--text", "-t", help="QID=TEXT free-text answer")
    ] = None,
    skip: Annotated[bool, typer.Option("--skip", help="Skip (reject) the whole bundle")] = False,
    reason: Annotated[str, typer.Option("--reason", help="Why you skip")] = DEFAULT_REASON,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Answer an agent's question (or Skip it)."""
    options, texts = option or [], text or []
    console = stdout()
    with client_for(server, token) as client:
        if skip and (options or texts):
            raise CliError("--skip cannot be combined with --option or --text", EXIT_USAGE)
        bundle = client.bundle(pending_id)
        if skip:
            body = skip_body(reason)
        elif options or texts:
            body = answers_body(bundle, options, texts)
        else:
            if not _interactive():
                raise CliError(
                    "no answer given and stdin is not a terminal",
                    EXIT_USAGE,
                    ("pass --option QID=OPTION, --text QID=TEXT or --skip",),
                )
            body = ask_interactively(console, bundle, reason)
        result = client.respond(pending_id, body)
    _report(console, result)


def _interactive() -> bool:
    import sys

    return sys.stdin.isatty()


def skip_body(reason: str) -> dict[str, Any]:
    return {"answers": [], "rejected": True, "reject_reason": reason}


def _split(raw: str, bundle: dict[str, Any], flag: str) -> tuple[str, str]:
    questions = bundle["questions"]
    qid, sep, value = raw.partition("=")
    if sep and qid in {q["id"] for q in questions}:
        return qid, value
    if len(questions) == 1:  # one question: the whole flag value is the answer
        return str(questions[0]["id"]), raw
    if not sep:
        raise CliError(f"{flag} {raw!r}: write it as QID=VALUE", EXIT_USAGE, _ids(bundle))
    raise CliError(f"{flag} {raw!r}: no question {qid!r}", EXIT_USAGE, _ids(bundle))


def _ids(bundle: dict[str, Any]) -> tuple[str, ...]:
    return (f"question ids: {', '.join(q['id'] for q in bundle['questions'])}",)


def resolve_option(question: dict[str, Any], value: str) -> str:
    """An option id from its id, its label (any case) or its 1-based number."""
    options = question.get("options") or []
    for opt in options:
        if opt["option_id"] == value:
            return str(opt["option_id"])
    for opt in options:
        if str(opt.get("label", "")).casefold() == value.casefold():
            return str(opt["option_id"])
    if value.isdigit() and 1 <= int(value) <= len(options):
        return str(options[int(value) - 1]["option_id"])
    known = ", ".join(f"{o['option_id']} ({o.get('label', '')})" for o in options)
    raise CliError(
        f"question {question['id']!r} has no option {value!r}", EXIT_USAGE, (f"options: {known}",)
    )


def answers_body(bundle: dict[str, Any], options: list[str], texts: list[str]) -> dict[str, Any]:
    """The respond body from `--option`/`--text` flags; every question needs an answer."""
    by_id = {q["id"]: q for q in bundle["questions"]}
    selected: dict[str, list[str]] = {qid: [] for qid in by_id}
    custom: dict[str, str] = {}
    for raw in options:
        qid, value = _split(raw, bundle, "--option")
        option_id = resolve_option(by_id[qid], value)
        if option_id not in selected[qid]:
            selected[qid].append(option_id)
    for raw in texts:
        qid, value = _split(raw, bundle, "--text")
        custom[qid] = f"{custom[qid]}\n{value}" if qid in custom else value
    missing = [qid for qid in by_id if not selected[qid] and not custom.get(qid)]
    if missing:
        raise CliError(
            f"no answer for question(s) {', '.join(missing)}",
            EXIT_USAGE,
            ("give --option QID=OPTION or --text QID=TEXT for each question, or --skip",),
        )
    return {
        "answers": [
            {
                "question_id": qid,
                "selected_options": selected[qid],
                "custom_text": custom.get(qid, ""),
            }
            for qid in by_id
        ],
        "rejected": False,
        "reject_reason": "",
    }


def _stored_answer(bundle: dict[str, Any]) -> str:
    rows = bundle.get("rows") or []
    if any((r.get("metadata") or {}).get("status") == "rejected" for r in rows):
        return "skipped"
    answers = [
        (r.get("metadata") or {}).get("response")
        for r in rows
        if isinstance((r.get("metadata") or {}).get("response"), dict)
    ]
    return describe_response({"answers": answers}) if answers else ""


def ask_interactively(console: Console, bundle: dict[str, Any], reason: str) -> dict[str, Any]:
    state = bundle.get("state")
    if state not in ACTIVE_STATES:
        stored = _stored_answer(bundle)
        raise CliError(
            f"this question can no longer be answered (state {state})",
            EXIT_CONFLICT,
            (f"the answer that won: {stored}",) if stored else (),
        )
    if bundle.get("context"):
        console.print(Text(safe(bundle["context"]), style="italic"))
    console.print(
        "Type option numbers (e.g. 1 or 1,3), or your own answer as text; "
        "type s to skip all questions."
    )
    questions = bundle["questions"]
    answers = []
    for number, question in enumerate(questions, start=1):
        console.print(question_block(number, len(questions), question))
        while True:
            try:
                raw = console.input("> ").strip()
            except EOFError:  # Ctrl-D: leave without sending anything
                raise CliError("no answer given; nothing was sent", EXIT_USAGE) from None
            if not raw:
                console.print("Please answer, or type s to skip.")
                continue
            if raw.casefold() in SKIP_WORDS:
                return skip_body(reason)
            picked = _numbers(raw, len(question.get("options") or []))
            if picked is None:
                answers.append(
                    {"question_id": question["id"], "selected_options": [], "custom_text": raw}
                )
                break
            if not picked:
                console.print("No such option number; try again.")
                continue
            ids = [question["options"][i - 1]["option_id"] for i in picked]
            answers.append(
                {"question_id": question["id"], "selected_options": ids, "custom_text": ""}
            )
            break
    return {"answers": answers, "rejected": False, "reject_reason": ""}


def _numbers(raw: str, count: int) -> list[int] | None:
    """Option numbers typed as `1`, `1,3` or `1 3`; None if it is text, [] if out of range."""
    tokens = raw.replace(",", " ").split()
    if not tokens or not all(t.isdigit() for t in tokens):
        return None
    numbers = list(dict.fromkeys(int(t) for t in tokens))
    return numbers if all(1 <= n <= count for n in numbers) else []


def _report(console: Console, result: dict[str, Any]) -> None:
    response = result.get("response") or {}
    if result.get("status") == "rejected":
        console.print(Text(safe(f"Skipped: {response.get('reject_reason', '')}"), style="green"))
    else:
        console.print(Text(safe(f"Answered: {describe_response(response)}"), style="green"))
    if result.get("resumed"):
        turn = result.get("successor_turn_id")
        console.print(Text(safe(f"The agent resumed in a new turn {turn}.")))
    elif result.get("status") == "answered":
        # What the server knows: the answer is durable and went to the agent's open call (a
        # dropped call detaches first, and then the answer resumes the agent instead); if the
        # agent stays silent, the watchdog hands it over again as a new prompt.
        console.print(
            "Saved and handed to the agent's waiting question call; if the agent does not "
            "continue, Clarion hands it over as a new prompt."
        )


def register(app: typer.Typer) -> None:
    app.command("answer")(answer)
