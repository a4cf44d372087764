"""What the client commands exit with, and how an error from the server reads to a person.

Imported by the client commands and the demo (a CliError is what any client of the server
raises; the CLI prints it). The exit codes are part of the CLI's contract
(docs/cli.md): scripts branch on them, so never renumber one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_SERVER_ERROR = 1  # 5xx, or a reply that is not the contract's shape
EXIT_USAGE = 2  # bad flags or input, or the server refused the request body (400)
EXIT_NOT_FOUND = 3  # 404
EXIT_CONFLICT = 4  # 409: not active any more, pending input, ...
EXIT_UNREACHABLE = 5  # no server at --server, a timeout, or the server is still starting (503)
EXIT_UNAUTHENTICATED = 6  # 401: missing or wrong --token


@dataclass
class CliError(Exception):
    """An expected failure: printed as `message` (plus `details` lines), never as a traceback."""

    message: str
    exit_code: int = EXIT_SERVER_ERROR
    details: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message


def describe_response(response: dict[str, Any] | None) -> str:
    """A stored answer in one line: `db: postgres` per question, or `skipped (reason)`."""
    if not response:
        return ""
    if response.get("rejected"):
        reason = response.get("reject_reason") or ""
        return f"skipped ({reason})" if reason else "skipped"
    parts = []
    for answer in response.get("answers") or []:
        chosen = ", ".join(answer.get("selected_options") or [])
        text = answer.get("custom_text") or ""
        value = "; ".join(p for p in (chosen, f'"{text}"' if text else "") if p)
        parts.append(f"{answer.get('question_id')}: {value or '(empty)'}")
    return "; ".join(parts)


def api_error(status: int, body_text: str, what: str) -> CliError:
    """Turn a non-2xx reply into a CliError, reading the contract's `{"error": {...}}` shape."""
    try:
        body = json.loads(body_text)
        error = body["error"]
        code = str(error["code"])
        message = str(error["message"])
        retryable = bool(error.get("retryable", False))
    except (ValueError, KeyError, TypeError):
        snippet = body_text.strip()[:200] or "(empty body)"
        return CliError(f"{what}: HTTP {status}: {snippet}", EXIT_SERVER_ERROR)

    details: list[str] = []
    if "field" in error:
        details.append(f"field: {error['field']}")
    if "state" in error:
        details.append(f"state: {error['state']}")
    if error.get("response"):
        details.append(f"the answer that won: {describe_response(error['response'])}")
    if status >= 500:
        details.append(
            "a retry is safe: the same request may be sent again"
            if retryable
            else "do not retry: the request was accepted and must not be sent again"
        )
    elif status == 409 and code == "not_active":
        details.append("this question can no longer be answered; nothing was written")
    return CliError(f"{what}: {message} ({code}, HTTP {status})", _exit_for(status), tuple(details))


def _exit_for(status: int) -> int:
    if status == 404:
        return EXIT_NOT_FOUND
    if status == 409:
        return EXIT_CONFLICT
    if status == 401:
        return EXIT_UNAUTHENTICATED
    if status == 503:
        return EXIT_UNREACHABLE
    if 400 <= status < 500:
        return EXIT_USAGE
    return EXIT_SERVER_ERROR
