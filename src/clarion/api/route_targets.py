"""Cluster mode: what a request acts on, the session it names and how it names it.

A request that acts on a session (an answer, a decision, a prompt, an agent's MCP call) must be
served by the replica that runs the session (api/routing.py); everything else is served where
it arrives. A request names its session directly, or through a bundle, a permission request's
message, an answer link's token or a decision link's token; a new session's creation names its
task (placement); a request on a task's worktree (its changes, a review, archiving) names the
task, and is served by its primary session's replica, where the task's agent and worktree are.

Each route says so where it is declared: `@acts_on(kind, param)` under its router decorator
names what its path parameter `param` holds, and `@served_anywhere` says that a route taking
such a parameter is still served where it arrives. The routing's table is read from the app's
own routes (`RouteTable.of`), their compiled paths and these declarations, so no path is written
twice and a new route is routed the moment it is declared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute

Kind = Literal["session", "bundle", "message", "placement", "link", "decision_link", "task"]

# The path parameters that name a session or something a session owns. A route that takes one
# declares its routing (tests/api/test_route_declarations.py walks the app for that): left
# undeclared, it would be served on whichever replica it reaches, without an error.
NAMING_PARAMS = frozenset({"session_id", "pending_id", "message_id", "task_id", "token"})

# HEAD reads: served where it arrives, like every read (Starlette adds it to GET routes).
_UNROUTED_METHODS = frozenset({"HEAD"})
_ATTRIBUTE = "__cluster_routing__"

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class Target:
    kind: Kind  # what names the session in the request
    key: str


@dataclass(frozen=True, slots=True)
class Routing:
    """A route's declaration: the kind of what its path parameter `param` names, or neither
    for a route served wherever it arrives."""

    kind: Kind | None
    param: str | None


ANYWHERE = Routing(None, None)


def acts_on(kind: Kind, param: str) -> Callable[[E], E]:
    """Declare an endpoint's routing: the request acts on what path parameter `param` names,
    a `kind`. Goes under the router's decorator (it marks the endpoint, which the route keeps)."""
    routing = Routing(kind, param)

    def declare(endpoint: E) -> E:
        setattr(endpoint, _ATTRIBUTE, routing)
        return endpoint

    return declare


def served_anywhere(endpoint: E) -> E:
    """Declare that an endpoint taking a naming parameter is served where it arrives (a read of
    the shared database)."""
    setattr(endpoint, _ATTRIBUTE, ANYWHERE)
    return endpoint


def declared(endpoint: object) -> Routing | None:
    """What `endpoint` declares, or None if it declares nothing."""
    routing = getattr(endpoint, _ATTRIBUTE, None)
    return routing if isinstance(routing, Routing) else None


@dataclass(frozen=True, slots=True)
class _Entry:
    pattern: re.Pattern[str]  # the route's own compiled path
    kind: Kind
    param: str


class RouteTable:
    """The routes that act on a session, by method, in the app's order."""

    def __init__(self, entries: Mapping[str, Sequence[_Entry]]) -> None:
        self._by_method = {method: tuple(found) for method, found in entries.items()}

    @classmethod
    def of(cls, routes: Sequence[BaseRoute]) -> RouteTable:
        """The table of an app's routes (`app.routes`, included routers walked into)."""
        entries: dict[str, list[_Entry]] = {}
        for route in iter_route_contexts(routes):
            routing = declared(route.endpoint)
            if routing is None or routing.kind is None or routing.param is None:
                continue
            if routing.param not in route.param_convertors:
                raise ValueError(
                    f"{route.path} declares routing by {routing.param!r}, "
                    "which is not one of its path parameters"
                )
            entry = _Entry(route.path_regex, routing.kind, routing.param)
            # A WebSocket route has no methods: a socket is served where it arrives.
            for method in sorted((route.methods or set()) - _UNROUTED_METHODS):
                entries.setdefault(method, []).append(entry)
        return cls(entries)

    def target_of(self, method: str, path: str) -> Target | None:
        """What a request acts on, or None for a request any replica serves itself."""
        for entry in self._by_method.get(method, ()):
            if match := entry.pattern.match(path):
                return Target(entry.kind, match.group(entry.param))
        return None

    def routed(self) -> Iterable[tuple[str, re.Pattern[str], Kind]]:
        """Every method and path the table routes, with the kind each names."""
        for method, found in self._by_method.items():
            for entry in found:
                yield method, entry.pattern, entry.kind


def undeclared(routes: Sequence[BaseRoute]) -> list[str]:
    """`METHODS path` of each route that takes a naming parameter and declares no routing."""
    missing = []
    for route in iter_route_contexts(routes):
        params = set(getattr(route, "param_convertors", None) or ())
        if params & NAMING_PARAMS and declared(route.endpoint) is None:
            methods = ",".join(sorted(route.methods or {"WEBSOCKET"}))
            missing.append(f"{methods} {route.path}")
    return missing
