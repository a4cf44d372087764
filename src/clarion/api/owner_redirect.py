"""Cluster mode, when `cluster.redirect_to_owner` is on: a request for another replica's
session is answered with a `307` to the owner's advertise URL, the same path and query, rather
than carried there (api/routing.py). A client that follows it reaches the owner itself, and the
replica it first reached does no more than read the route: no request-reply hop, no relayed
body. A 307 keeps the method and the body, so an answer is sent again as it was.

Carried instead, as when the option is off:
- a request from a web page (it has `Origin` or `Sec-Fetch-Mode`): a browser would follow the
  redirect to another origin, where the page's own requests are not allowed;
- a request for a replica that is not live (its sessions are being adopted: the carry waits
  for the adopter), or whose advertise URL names no host a client can reach (`0.0.0.0`);
- a request already carried (api/routing.py serves those where they arrive: no loop).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import Scope, Send

from clarion.ports.cluster import Directory

# Headers only a browser's page sends: its requests are carried, never redirected.
_BROWSER_HEADERS = frozenset({b"origin", b"sec-fetch-mode"})
# Addresses a server binds to but no client can be sent to.
_UNROUTABLE_HOSTS = frozenset({"0.0.0.0", "::", ""})


def reachable(advertise_url: str) -> bool:
    """Whether a client can be sent to `advertise_url`."""
    try:
        host = urlsplit(advertise_url).hostname
    except ValueError:
        return False
    return host is not None and host not in _UNROUTABLE_HOSTS


class OwnerRedirect:
    """Where a request for `owner`'s session may be sent instead of carried, if anywhere.

    An advertise URL never changes under a replica id (a replica takes a new id each start),
    so it is read once per owner; the liveness that routes already rely on (the peer watch,
    the adopter's word, a failed carry) forgets it with the owner (`forget`)."""

    def __init__(self, directory: Directory) -> None:
        self._directory = directory
        self._urls: dict[str, str | None] = {}  # owner -> its URL, None: not one to send to

    def forget(self, owner: str) -> None:
        self._urls.pop(owner, None)

    async def location(self, owner: str, scope: Scope) -> str | None:
        """The `Location` for this request, or None to carry it."""
        if any(name in _BROWSER_HEADERS for name, _ in scope.get("headers", ())):
            return None
        if owner in self._urls:
            base = self._urls[owner]
        else:
            info = await self._directory.replica(owner)
            if info is None:  # not live: the carry waits for its adopter
                return None
            base = info.advertise_url.rstrip("/") if reachable(info.advertise_url) else None
            self._urls[owner] = base
        if base is None:
            return None
        # The path as the client sent it, encoded; some servers put the query in raw_path.
        raw = scope.get("raw_path") or scope["path"].encode()
        path: str = raw.split(b"?", 1)[0].decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        return base + path + (f"?{query}" if query else "")


async def send_redirect(location: str, send: Send) -> None:
    """A `307` to `location`, with an empty body."""
    headers = [(b"location", location.encode("latin-1")), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
