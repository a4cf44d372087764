"""Cluster mode: what a request acts on, the session it names and how it names it.

A request that acts on a session (an answer, a decision, a prompt, an agent's MCP call) must be
served by the replica that runs the session (api/routing.py); everything else is served where
it arrives. A request names its session directly, or through a bundle, a permission request's
message, an answer link's token or a decision link's token; a new session's creation names its
task (placement); a request on a task's worktree (its changes, a review, archiving) names the
task, and is served by its primary session's replica, where the task's agent and worktree are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["session", "bundle", "message", "placement", "link", "decision_link", "task"]


@dataclass(frozen=True, slots=True)
class Target:
    kind: Kind  # what names the session in the request
    key: str


# The requests that act on a session, by what names the session.
ROUTES: tuple[tuple[str, re.Pattern[str], Kind], ...] = (
    ("GET", re.compile(r"/api/v1/clarification/([^/]+)"), "bundle"),
    ("POST", re.compile(r"/api/v1/clarification/([^/]+)/(?:respond|resend|cancel)"), "bundle"),
    # An answer link names its bundle inside the signed token (`link_pending` reads it).
    ("GET", re.compile(r"/api/v1/a/([^/]+)"), "link"),
    ("POST", re.compile(r"/api/v1/a/([^/]+)/respond"), "link"),
    # A decision link names its permission request inside the signed token (`link_message`).
    ("GET", re.compile(r"/api/v1/p/([^/]+)"), "decision_link"),
    ("POST", re.compile(r"/api/v1/p/([^/]+)/respond"), "decision_link"),
    ("GET", re.compile(r"/api/v1/permission/([^/]+)"), "message"),
    ("POST", re.compile(r"/api/v1/permission/([^/]+)/respond"), "message"),
    ("POST", re.compile(r"/api/v1/task-sessions/([^/]+)/(?:prompt|cancel|finish)"), "session"),
    ("DELETE", re.compile(r"/api/v1/task-sessions/([^/]+)/messages/[^/]+"), "session"),
    ("POST", re.compile(r"/api/v1/tasks/([^/]+)/task-sessions"), "placement"),
    ("GET", re.compile(r"/api/v1/tasks/([^/]+)/changes"), "task"),
    ("POST", re.compile(r"/api/v1/tasks/([^/]+)/(?:review|archive)"), "task"),
    ("GET", re.compile(r"/mcp/sessions/([^/]+)"), "session"),
    ("POST", re.compile(r"/mcp/sessions/([^/]+)"), "session"),
    ("DELETE", re.compile(r"/mcp/sessions/([^/]+)"), "session"),
)


def target_of(method: str, path: str) -> Target | None:
    """What a request acts on, or None for a request any replica serves itself."""
    for route_method, pattern, kind in ROUTES:
        if method == route_method and (match := pattern.fullmatch(path)):
            return Target(kind, match.group(1))
    return None
