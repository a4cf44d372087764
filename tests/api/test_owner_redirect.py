"""Cluster routing with `cluster.redirect_to_owner` on (api/owner_redirect.py), in process, on
the in-process cluster of tests/api/test_routing.py: a request for another live replica's
session gets a 307 to the owner's advertise URL, which a following client takes to the owner
itself; what is carried instead (a carried request, a browser's, an owner that is not live or
has no address a client can reach) and an MCP request, which stays proxied."""

from __future__ import annotations

import httpx
import pytest
from tests.api.test_routing import ME, PROMPT, Cluster

from clarion.api.carrying import CARRIED_BY
from clarion.api.owner_redirect import reachable


def _cluster(*others: str, redirect: bool = True) -> Cluster:
    cluster = Cluster(*others, redirect_to_owner=redirect)
    cluster.directory.owners["s1"] = "b"
    return cluster


def _following(cluster: Cluster, first: str = ME) -> httpx.AsyncClient:
    """A client that follows redirects: each replica at its advertise URL."""
    mounts = {
        f"http://{rid}:8787": httpx.ASGITransport(app=replica.routing)
        for rid, replica in cluster.replicas.items()
    }
    return httpx.AsyncClient(mounts=mounts, base_url=f"http://{first}:8787", follow_redirects=True)


async def test_a_request_for_another_replicas_session_is_redirected_to_its_owner() -> None:
    cluster = _cluster("b")
    async with cluster.client() as client:
        response = await client.post(PROMPT + "?x=1&y=%20", content=b'{"text":"hi"}')
    assert response.status_code == 307
    assert response.headers["location"] == f"http://b:8787{PROMPT}?x=1&y=%20"
    assert response.content == b""
    assert cluster.served_anywhere() == {} and cluster.transport.sent == []


async def test_a_following_client_reaches_the_owner_with_the_method_and_body_kept() -> None:
    cluster = _cluster("b")
    async with _following(cluster) as client:
        response = await client.post(PROMPT, content=b'{"text":"hi"}')
    assert response.status_code == 200
    # Served by the owner itself, not carried to it.
    assert response.json() == {"served_by": "b", "body": '{"text":"hi"}', "by": None}
    assert cluster.transport.sent == []
    assert [r.status_code for r in response.history] == [307]


async def test_with_redirects_off_the_request_is_carried() -> None:
    cluster = _cluster("b", redirect=False)
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    assert response.json() == {"served_by": "b", "body": "{}", "by": ME}
    assert cluster.transport.sent == ["b"] and cluster.directory.replicas_read == []


async def test_a_request_for_a_session_owned_here_is_served_here() -> None:
    cluster = _cluster("b")
    cluster.directory.owners["s1"] = ME
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    assert response.json()["served_by"] == ME


async def test_a_carried_request_is_never_redirected() -> None:
    # ME carries to b (a browser's request); b's own lookup now names c: b serves it, no loop.
    cluster = _cluster("b", "c")

    def moved(_replica_id: str) -> None:
        cluster.directory.owners["s1"] = "c"

    cluster.transport.before = moved
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}", headers={"origin": "http://me"})
    assert response.status_code == 200 and response.json()["served_by"] == "b"
    async with cluster.client("b") as client:
        marked = await client.post(PROMPT, content=b"{}", headers={CARRIED_BY: ME})
    assert marked.status_code == 200 and marked.json()["served_by"] == "b"


@pytest.mark.parametrize("header", ["origin", "sec-fetch-mode"])
async def test_a_web_pages_request_is_carried_not_redirected(header: str) -> None:
    cluster = _cluster("b")
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}", headers={header: "x"})
    assert response.json()["served_by"] == "b" and cluster.transport.sent == ["b"]


@pytest.mark.parametrize("url", ["http://0.0.0.0:8787", "http://[::]:8787"])
async def test_an_owner_without_a_reachable_advertise_url_gets_the_carry(url: str) -> None:
    cluster = _cluster("b")
    cluster.directory.urls["b"] = url
    async with cluster.client() as client:
        first = await client.post(PROMPT, content=b"1")
        second = await client.post(PROMPT, content=b"2")
    assert [first.status_code, second.status_code] == [200, 200]
    assert cluster.transport.sent == ["b", "b"]
    assert cluster.directory.replicas_read == ["b"]  # its URL read once


async def test_an_owner_that_is_not_live_falls_back_to_the_carry() -> None:
    cluster = _cluster("b")
    cluster.directory.live.discard("b")
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    assert response.json()["served_by"] == "b" and cluster.transport.sent == ["b"]


async def test_an_owners_url_is_read_once_and_again_once_it_is_gone() -> None:
    cluster = _cluster("b")
    async with cluster.client() as client:
        for _ in range(3):
            assert (await client.post(PROMPT, content=b"{}")).status_code == 307
        cluster[ME].routing.owner_gone("b")
        cluster.directory.urls["b"] = "http://b-again:8787/"
        response = await client.post(PROMPT, content=b"{}")
    assert response.headers["location"] == f"http://b-again:8787{PROMPT}"
    assert cluster.directory.replicas_read == ["b", "b"]


async def test_an_agents_mcp_request_stays_proxied() -> None:
    cluster = _cluster("b")
    async with cluster.client() as client:
        response = await client.post("/mcp/sessions/s1", content=b"{}")
    assert response.status_code == 202 and response.text == "proxied to b"


def test_only_an_address_with_a_host_a_client_can_reach_is_redirected_to() -> None:
    assert reachable("http://replica-a.internal:8787")
    assert not reachable("http://0.0.0.0:8787") and not reachable("not a url")
