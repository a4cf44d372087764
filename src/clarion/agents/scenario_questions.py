"""The questions the built-in agent's scenarios ask: `ask_user_question`'s arguments for one
question (`db`), the same with a default an expiry may choose, and three at once with context.

Pure data; used by `clarion.agents.scenarios` and by the recovery bench, which asks the same
question.
"""

from __future__ import annotations

from typing import Any

_DB_QUESTION: dict[str, Any] = {
    "id": "db",
    "title": "Database",
    "prompt": "Which database should the service use?",
    "options": [
        {"option_id": "postgres", "label": "PostgreSQL", "description": "Relational, strong SQL"},
        {"option_id": "mongodb", "label": "MongoDB", "description": "Document store"},
        {"option_id": "sqlite", "label": "SQLite", "description": "Embedded, single file"},
    ],
}

_LANGUAGE_QUESTION: dict[str, Any] = {
    "id": "language",
    "title": "Language",
    "prompt": "Which language should the service be written in?",
    "options": [
        {"option_id": "python", "label": "Python", "description": "Fast to write"},
        {"option_id": "go", "label": "Go", "description": "Single static binary"},
        {"option_id": "rust", "label": "Rust", "description": "Memory safe, fast"},
    ],
}

_DEPLOY_QUESTION: dict[str, Any] = {
    "id": "deploy",
    "title": "Deployment",
    "prompt": "How should the service be deployed?",
    "options": [
        {"option_id": "docker", "label": "Docker", "description": "Container image"},
        {"option_id": "bare-metal", "label": "Bare metal", "description": "systemd unit"},
    ],
}

MULTI_CONTEXT = (
    "I am setting up a new backend service for the task. Before I write code I need three "
    "decisions: where the data lives, which language to use, and how it ships."
)


def ask_arguments() -> dict[str, Any]:
    return {"questions": [_DB_QUESTION]}


def ask_default_arguments(expires_in: str | None = None) -> dict[str, Any]:
    """The `db` question with SQLite marked as the option an expiry may choose."""
    options = [
        {**option, "default": True} if option["option_id"] == "sqlite" else option
        for option in _DB_QUESTION["options"]
    ]
    arguments: dict[str, Any] = {"questions": [{**_DB_QUESTION, "options": options}]}
    if expires_in is not None:
        arguments["expires_in"] = expires_in
    return arguments


_MARKDOWN_QUESTION: dict[str, Any] = {
    "id": "cache",
    "title": "Cache",
    "prompt": "Which **cache** should the service use? See [the notes](https://example.com/notes).",
    "options": [
        {"option_id": "redis", "label": "**Redis**", "description": "Runs as `redis-server`"},
        {
            "option_id": "none",
            "label": "No cache",
            "description": "Read [why](https://example.com/why) first",
            "default": True,
        },
    ],
}

MARKDOWN_CONTEXT = "I read the **config** first:\n\n```\ncache = off\n```"


def ask_markdown_arguments() -> dict[str, Any]:
    """A question written in Markdown (prompt, labels, descriptions and context), whose second
    option is the default: what a page must render, never show as typed."""
    return {"questions": [_MARKDOWN_QUESTION], "context": MARKDOWN_CONTEXT}


def ask_multi_arguments() -> dict[str, Any]:
    return {
        "questions": [_DB_QUESTION, _LANGUAGE_QUESTION, _DEPLOY_QUESTION],
        "context": MULTI_CONTEXT,
    }
