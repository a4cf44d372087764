"""Cluster mode: which replica owns a session, remembered so that a request does not read it
every time.

A session leaves its owner only when a survivor adopts it, and a survivor adopts only a replica
that is gone (it holds no liveness lock: it died, stopped or fenced itself). So a route to a
replica stays true for as long as that replica lives: a route to this replica for this
replica's whole life, a route to another one until it is known gone. It is known gone from
the peer watch (every replica sees a peer's lock go within a watch interval, well before the
fencing window lets anyone adopt it), from the adopter's announcement, or from a request
carried to it that nobody received. From then on every route to it is read afresh, so a
request waiting for its sessions' adoption sees the adopter.
"""

from __future__ import annotations

from clarion.api.route_targets import Target
from clarion.ports.cluster import SessionRoute

# How many routes are remembered, this replica's own and the others' apart (then that memory
# restarts).
REMEMBERED_ROUTES = 10_000


class RouteMemory:
    def __init__(self, replica_id: str) -> None:
        self._id = replica_id
        self._own: dict[Target, SessionRoute] = {}
        self._theirs: dict[Target, SessionRoute] = {}
        self._gone: set[str] = set()

    def get(self, target: Target, *, theirs: bool = True) -> SessionRoute | None:
        """The remembered route; with `theirs` False, only a route to this replica."""
        known = self._own.get(target)
        if known is None and theirs:
            known = self._theirs.get(target)
        return known

    def remember(self, target: Target, route: SessionRoute, *, theirs: bool = True) -> None:
        """Keep a route just read, unless it names nobody, or another replica known gone."""
        if route.owner is None:
            return
        if route.owner == self._id:
            _keep(self._own, target, route)
        elif theirs and route.owner not in self._gone:
            _keep(self._theirs, target, route)

    def forget(self, owner: str) -> None:
        """Read every route to `owner` afresh next time (it did not answer as expected)."""
        for target in [t for t, r in self._theirs.items() if r.owner == owner]:
            del self._theirs[target]

    def owner_gone(self, owner: str) -> None:
        """`owner` holds no liveness lock: its sessions are, or are about to be, a survivor's,
        so routes to it are read afresh from now on and never remembered again."""
        if owner == self._id or owner in self._gone:
            return
        self._gone.add(owner)
        self.forget(owner)


def _keep(routes: dict[Target, SessionRoute], target: Target, route: SessionRoute) -> None:
    if len(routes) >= REMEMBERED_ROUTES:
        routes.clear()
    routes[target] = route
