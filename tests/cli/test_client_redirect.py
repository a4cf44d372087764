"""The CLI's client follows a cluster replica's 307 to a session's owner once, with the same
method, body and credentials (httpx alone would drop the token on a redirect to another host)."""

from __future__ import annotations

import httpx

from clarion.client.http import ClarionClient

OWNER = "http://owner.internal:8787"


def test_a_307_to_the_owner_is_followed_once_with_the_body_and_the_token() -> None:
    seen: list[tuple[str, str, bytes, str | None]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(
            (
                request.method,
                str(request.url),
                request.content,
                request.headers.get("authorization"),
            )
        )
        if request.url.host == "other":
            return httpx.Response(307, headers={"location": f"{OWNER}{request.url.path}"})
        return httpx.Response(200, json={"resumed": False})

    transport = httpx.MockTransport(handle)
    with ClarionClient("http://other:8787", token="t0k", transport=transport) as client:
        body = client.json("POST", "/clarification/p1/respond", json={"rejected": True})
    assert body == {"resumed": False}
    sent = b'{"rejected":true}'
    assert seen == [
        ("POST", "http://other:8787/api/v1/clarification/p1/respond", sent, "Bearer t0k"),
        ("POST", f"{OWNER}/api/v1/clarification/p1/respond", sent, "Bearer t0k"),
    ]


def test_a_second_redirect_is_not_followed() -> None:
    hops: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        hops.append(str(request.url))
        return httpx.Response(307, headers={"location": f"{OWNER}/api/v1/x"})

    with ClarionClient("http://other:8787", transport=httpx.MockTransport(handle)) as client:
        response = client.call_raw("GET", "/x")
    assert response.status_code == 307 and len(hops) == 2
