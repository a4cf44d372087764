"""Cluster routing (api/routing.py), in process: several replicas, each its own application
behind its own ClusterRouting, a directory that says which replica owns each session, and a
transport that carries a request to a replica by running it through that replica's routing
(as NATS request-reply does). Which replica serves each request, what the caller gets when
the owner cannot be reached, and how requests wait for sessions being adopted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import httpx
import pytest
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send
from tests.app_routes import app_routes

from clarion.api import routing
from clarion.api.carrying import CARRIED_BY, RequestCarrier, carried_by, read_body, replay
from clarion.api.mcp_proxy import McpToOwner
from clarion.api.route_targets import RouteTable, Target
from clarion.api.routing import ClusterRouting
from clarion.api.session_gate import SessionGate
from clarion.ports.cluster import (
    CarriedReply,
    CarriedRequest,
    CarryFailed,
    ReplicaInfo,
    SessionRoute,
)

ME = "me"
# The application's own routes and what they declare (api/route_targets.py).
TABLE = RouteTable.of(app_routes())
CEILING_S = 30  # a hang guard, far above what any of these takes

# --- what each route acts on --------------------------------------------------------------

CLASSIFIED: list[tuple[str, str, Target]] = [
    ("GET", "/api/v1/clarification/p1", Target("bundle", "p1")),
    ("POST", "/api/v1/clarification/p1/respond", Target("bundle", "p1")),
    ("POST", "/api/v1/clarification/p1/resend", Target("bundle", "p1")),
    ("POST", "/api/v1/clarification/p1/cancel", Target("bundle", "p1")),
    ("GET", "/api/v1/a/tok", Target("link", "tok")),
    ("POST", "/api/v1/a/tok/respond", Target("link", "tok")),
    ("GET", "/api/v1/p/tok", Target("decision_link", "tok")),
    ("POST", "/api/v1/p/tok/respond", Target("decision_link", "tok")),
    ("GET", "/api/v1/permission/m1", Target("message", "m1")),
    ("POST", "/api/v1/permission/m1/respond", Target("message", "m1")),
    ("POST", "/api/v1/task-sessions/s1/prompt", Target("session", "s1")),
    ("POST", "/api/v1/task-sessions/s1/cancel", Target("session", "s1")),
    ("POST", "/api/v1/task-sessions/s1/finish", Target("session", "s1")),
    ("DELETE", "/api/v1/task-sessions/s1/messages/m9", Target("session", "s1")),
    ("POST", "/api/v1/tasks/t1/task-sessions", Target("placement", "t1")),
    ("GET", "/api/v1/tasks/t1/changes", Target("task", "t1")),
    ("POST", "/api/v1/tasks/t1/review", Target("task", "t1")),
    ("POST", "/api/v1/tasks/t1/archive", Target("task", "t1")),
    ("GET", "/mcp/sessions/s1", Target("session", "s1")),
    ("POST", "/mcp/sessions/s1", Target("session", "s1")),
    ("DELETE", "/mcp/sessions/s1", Target("session", "s1")),
]

READS: list[tuple[str, str]] = [
    ("GET", "/api/v1/tasks"),
    ("GET", "/api/v1/tasks/t1"),
    ("GET", "/api/v1/tasks/t1/task-sessions"),
    ("GET", "/api/v1/task-sessions/s1"),
    ("GET", "/api/v1/task-sessions/s1/messages"),
    ("GET", "/api/v1/task-sessions/s1/turns"),
    ("GET", "/api/v1/boot"),
    ("GET", "/api/v1/cluster"),
    ("POST", "/api/v1/tasks"),  # a task belongs to no replica
    ("POST", "/api/v1/tasks/t1/move"),
    ("POST", "/api/v1/login"),
    ("GET", "/api/v1/ws"),
    ("GET", "/static/app.js"),
    ("POST", "/api/v1/clarification/p1/respond/more"),  # the whole path must match
    ("POST", "/api/v1/a/tok/cancel"),
    ("GET", "/a/tok"),  # the page reads through the API
]


@pytest.mark.parametrize(("method", "path", "target"), CLASSIFIED)
def test_a_request_that_acts_on_a_session_is_classified_by_what_names_it(
    method: str, path: str, target: Target
) -> None:
    assert TABLE.target_of(method, path) == target


def test_the_classified_examples_cover_every_routed_request() -> None:
    routed = list(TABLE.routed())
    covered = {
        i
        for method, path, target in CLASSIFIED
        for i, (route_method, pattern, kind) in enumerate(routed)
        if method == route_method and pattern.match(path) and kind == target.kind
    }
    assert covered == set(range(len(routed)))


@pytest.mark.parametrize(("method", "path"), READS)
def test_reads_and_requests_that_act_on_no_session_are_left_alone(method: str, path: str) -> None:
    assert TABLE.target_of(method, path) is None


# --- an in-process cluster ----------------------------------------------------------------


def _info(replica_id: str, url: str | None = None) -> ReplicaInfo:
    now = datetime.now(UTC)
    return ReplicaInfo(replica_id, url or f"http://{replica_id}:8787", "active", now, now, 0)


class Directory:
    """Implements ports.cluster.Directory from dicts the test sets."""

    def __init__(self, live: set[str]) -> None:
        self.owners: dict[str, str | None] = {}  # session -> owner
        self.bundles: dict[str, str] = {}  # pending id -> session
        self.messages: dict[str, str] = {}  # message id -> session
        self.tasks: dict[str, str] = {}  # task id -> its primary session
        self.order: list[str] = []  # placement, fewest sessions first
        self.placement_fails: Exception | None = None
        self.live = set(live)  # replicas with a live row
        self.gone: set[str] = set()  # replicas that hold no liveness lock
        self.urls: dict[str, str] = {}  # advertise URLs other than http://<id>:8787
        self.asked: list[tuple[str, str]] = []
        self.replicas_read: list[str] = []
        self._read = asyncio.Event()

    def _route(self, kind: str, key: str, session_id: str | None) -> SessionRoute | None:
        self.asked.append((kind, key))
        self._read.set()
        if session_id is None or session_id not in self.owners:
            return None
        return SessionRoute(session_id, self.owners[session_id])

    async def route_of_session(self, session_id: str) -> SessionRoute | None:
        return self._route("session", session_id, session_id)

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None:
        return self._route("bundle", pending_id, self.bundles.get(pending_id))

    async def route_of_message(self, message_id: str) -> SessionRoute | None:
        return self._route("message", message_id, self.messages.get(message_id))

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        return self._route("task", task_id, self.tasks.get(task_id))

    async def placement(self) -> list[str]:
        if self.placement_fails is not None:
            raise self.placement_fails
        return list(self.order)

    async def replica(self, replica_id: str) -> ReplicaInfo | None:
        self.replicas_read.append(replica_id)
        return _info(replica_id, self.urls.get(replica_id)) if replica_id in self.live else None

    async def is_gone(self, replica_id: str) -> bool:
        return replica_id in self.gone

    async def until_routes_read(self, times: int) -> None:
        while len(self.asked) < times:
            self._read.clear()
            await self._read.wait()


class Transport:
    """Request-reply between the in-process replicas: runs a request through the routing of
    the replica it is sent to, unless told that replica fails."""

    def __init__(self) -> None:
        self.replicas: dict[str, Replica] = {}
        self.failures: dict[str, CarryFailed] = {}
        self.before: Callable[[str], None] | None = None
        self.sent: list[str] = []

    async def carry(
        self, replica_id: str, request: CarriedRequest, timeout_s: float
    ) -> CarriedReply:
        self.sent.append(replica_id)
        if self.before is not None:
            self.before(replica_id)
        if replica_id in self.failures:
            raise self.failures[replica_id]
        return await replay(self.replicas[replica_id].routing, request)


class Mcp:
    """Stands in for McpToOwner: records to whom each MCP request would be proxied."""

    def __init__(self) -> None:
        self.proxied: list[tuple[str, ReplicaInfo]] = []

    async def proxy(self, scope: Scope, receive: Receive, send: Send, owner: ReplicaInfo) -> None:
        self.proxied.append((scope["path"], owner))
        await PlainTextResponse(f"proxied to {owner.id}", 202)(scope, receive, send)


@dataclass(frozen=True)
class Served:
    method: str
    path: str
    body: bytes
    by: str | None  # the carried-by mark


class WatchedGate(SessionGate):
    """A SessionGate that says when a request starts waiting at it."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()

    async def wait(self, session_id: str) -> None:
        if self.is_held(session_id):
            self.holding.set()
        await super().wait(session_id)


class Replica:
    """One replica: an application that records what it served, behind its ClusterRouting."""

    def __init__(self, replica_id: str, cluster: Cluster) -> None:
        self.id = replica_id
        self.served: list[Served] = []
        self.answer: Response | None = None  # what the app replies; by default an echo
        self.gate = WatchedGate()
        self.mcp = Mcp()
        self.routing = ClusterRouting(
            self._app,
            routes=TABLE,
            replica_id=replica_id,
            directory=cluster.directory,
            carrier=RequestCarrier(cluster.transport, cluster.directory, 3600.0),
            mcp=cast(McpToOwner, self.mcp),
            gate=self.gate,
            adoption_wait_s=cluster.adoption_wait_s,
            link_pending=LINKS.get,
            link_message=DECISION_LINKS.get,
            redirect_to_owner=cluster.redirect_to_owner,
        )

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            self.served.append(Served(scope["type"], scope["path"], b"", None))
            return
        body = await read_body(receive)
        self.served.append(Served(scope["method"], scope["path"], body, carried_by(scope)))
        response = self.answer or JSONResponse(
            {"served_by": self.id, "body": body.decode(), "by": carried_by(scope)}
        )
        await response(scope, receive, send)


class Cluster:
    def __init__(
        self, *others: str, adoption_wait_s: float = 3600.0, redirect_to_owner: bool = False
    ) -> None:
        self.directory = Directory(live={ME, *others})
        self.transport = Transport()
        self.adoption_wait_s = adoption_wait_s
        self.redirect_to_owner = redirect_to_owner
        self.replicas = {rid: Replica(rid, self) for rid in (ME, *others)}
        self.transport.replicas = self.replicas

    def __getitem__(self, replica_id: str) -> Replica:
        return self.replicas[replica_id]

    def client(self, replica_id: str = ME) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.replicas[replica_id].routing)
        return httpx.AsyncClient(transport=transport, base_url=f"http://{replica_id}")

    def served_anywhere(self) -> dict[str, list[Served]]:
        return {rid: r.served for rid, r in self.replicas.items() if r.served}


def _error(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.fixture(autouse=True)
def _quick_adoption_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routing, "_ADOPTION_POLL_S", 0.01)


PROMPT = "/api/v1/task-sessions/s1/prompt"
# Answer-link tokens the replicas accept, and the pending id each names.
LINKS = {"good-token": "p1"}
# Decision-link tokens the replicas accept, and the permission request's message each names.
DECISION_LINKS = {"good-decision": "m1"}

# --- served here, or carried to the owner -------------------------------------------------


@pytest.mark.parametrize("owner", [ME, None], ids=["owned-here", "owned-by-nobody"])
async def test_a_request_for_a_session_this_replica_owns_or_nobody_owns_is_served_here(
    owner: str | None,
) -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = owner
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"hi")
    assert response.json() == {"served_by": ME, "body": "hi", "by": None}
    assert cluster.transport.sent == []


async def test_a_request_for_an_unknown_session_is_served_here_to_say_so() -> None:
    cluster = Cluster("b")
    async with cluster.client() as client:
        response = await client.post("/api/v1/clarification/nope/respond", content=b"{}")
    assert response.json()["served_by"] == ME
    assert cluster.directory.asked == [("bundle", "nope")]
    assert cluster.transport.sent == []


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/v1/tasks"), ("GET", "/api/v1/task-sessions/s1/messages")],
)
async def test_a_read_is_served_here_without_asking_who_owns_anything(
    method: str, path: str
) -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    async with cluster.client() as client:
        response = await client.request(method, path)
    assert response.json()["served_by"] == ME
    assert cluster.directory.asked == [] and cluster.transport.sent == []


async def test_a_websocket_is_served_here_whatever_its_path() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    scope: Scope = {"type": "websocket", "path": "/mcp/sessions/s1", "headers": []}

    async def receive() -> dict[str, Any]:
        raise AssertionError("the test app reads nothing")

    async def send(message: Any) -> None:
        raise AssertionError("the test app sends nothing")

    await cluster[ME].routing(scope, receive, send)
    assert cluster[ME].served == [Served("websocket", "/mcp/sessions/s1", b"", None)]
    assert cluster.directory.asked == []


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (PROMPT, {}),
        ("/api/v1/clarification/p1/respond", {"bundles": {"p1": "s1"}}),
        ("/api/v1/permission/m1/respond", {"messages": {"m1": "s1"}}),
        ("/api/v1/tasks/t1/review", {"tasks": {"t1": "s1"}}),
        ("/api/v1/tasks/t1/archive", {"tasks": {"t1": "s1"}}),
    ],
    ids=["session", "bundle", "message", "task-review", "task-archive"],
)
async def test_a_request_for_another_replicas_session_is_carried_there_marked(
    path: str, named: dict[str, dict[str, str]]
) -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    for attribute, mapping in named.items():
        getattr(cluster.directory, attribute).update(mapping)
    async with cluster.client() as client:
        response = await client.post(
            path + "?x=1", content=b'{"answers":[]}', headers={"authorization": "Bearer t"}
        )
    assert response.json() == {"served_by": "b", "body": '{"answers":[]}', "by": ME}
    assert cluster.served_anywhere() == {"b": [Served("POST", path, b'{"answers":[]}', ME)]}
    assert cluster.transport.sent == ["b"]


async def test_the_owners_reply_is_relayed_unchanged() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    winner = {"error": {"code": "not_active", "message": "already answered", "retryable": False}}
    answer = JSONResponse(winner, status_code=409, headers={"x-winner": "w1"})
    answer.raw_headers += [(b"set-cookie", b"a=1"), (b"set-cookie", b"b=2")]
    cluster["b"].answer = answer
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    assert response.status_code == 409
    assert response.json() == winner
    assert response.headers["x-winner"] == "w1"
    assert response.headers.get_list("set-cookie") == ["a=1", "b=2"]


async def test_a_carried_request_is_served_where_it_arrives_never_carried_again() -> None:
    cluster = Cluster("b", "c")
    cluster.directory.owners["s1"] = "b"

    def moved(replica_id: str) -> None:
        cluster.directory.owners["s1"] = "c"  # b's own lookup would now name c

    cluster.transport.before = moved
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"once")
    assert response.json()["served_by"] == "b"
    assert cluster.transport.sent == ["b"]


async def test_a_request_marked_as_carried_is_served_here_whoever_owns_the_session() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}", headers={CARRIED_BY: "b"})
    assert response.json()["served_by"] == ME
    assert cluster.transport.sent == []


# --- the owner cannot be reached ----------------------------------------------------------


async def test_a_request_nobody_received_waits_for_the_adoption_and_goes_to_the_adopter() -> None:
    cluster = Cluster("a", "c")
    cluster.directory.owners["s1"] = "a"
    cluster.directory.gone.add("a")
    cluster.transport.failures["a"] = CarryFailed("no responders", may_have_applied=False)
    async with cluster.client() as client:
        posting = asyncio.ensure_future(client.post(PROMPT, content=b"hello"))
        # The first lookup, then two more while it waits for a survivor to adopt s1.
        await asyncio.wait_for(cluster.directory.until_routes_read(3), CEILING_S)
        assert not posting.done()
        cluster.directory.owners["s1"] = "c"
        response = await asyncio.wait_for(posting, CEILING_S)
    assert response.json() == {"served_by": "c", "body": "hello", "by": ME}
    assert cluster.transport.sent == ["a", "c"]


async def test_a_request_for_a_session_this_replica_adopted_is_served_here_with_its_body() -> None:
    cluster = Cluster("a")
    cluster.directory.owners["s1"] = "a"
    cluster.directory.gone.add("a")
    cluster.transport.failures["a"] = CarryFailed("no responders", may_have_applied=False)
    async with cluster.client() as client:
        posting = asyncio.ensure_future(client.post(PROMPT, content=b"hello"))
        await asyncio.wait_for(cluster.directory.until_routes_read(2), CEILING_S)
        cluster.directory.owners["s1"] = ME
        response = await asyncio.wait_for(posting, CEILING_S)
    assert response.json() == {"served_by": ME, "body": "hello", "by": None}
    assert cluster.transport.sent == ["a"]


async def test_a_gone_owners_session_not_adopted_in_time_is_a_retryable_503() -> None:
    cluster = Cluster("a", adoption_wait_s=0.05)
    cluster.directory.owners["s1"] = "a"
    cluster.directory.gone.add("a")
    cluster.directory.live.discard("a")
    cluster.transport.failures["a"] = CarryFailed("no responders", may_have_applied=False)
    async with cluster.client() as client:
        response = await asyncio.wait_for(client.post(PROMPT, content=b"{}"), CEILING_S)
    error = _error(response)
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("replica_unavailable", True)
    assert error["replica"] == {"id": "a", "advertise_url": None}
    assert cluster.served_anywhere() == {}


async def test_a_request_nobody_received_for_a_live_owner_is_a_retryable_503_naming_it() -> None:
    cluster = Cluster("a")
    cluster.directory.owners["s1"] = "a"  # "a" holds its liveness lock: nobody will adopt s1
    cluster.transport.failures["a"] = CarryFailed("NATS is down", may_have_applied=False)
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    error = _error(response)
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("replica_unavailable", True)
    assert error["replica"] == {"id": "a", "advertise_url": "http://a:8787"}
    assert "NATS is down" in error["message"] and "nothing was applied" in error["message"]
    assert cluster.transport.sent == ["a"]  # not sent twice
    assert cluster.directory.asked == [("session", "s1")]  # and no waiting for an adoption
    assert cluster.served_anywhere() == {}


async def test_a_request_that_went_out_without_a_reply_is_a_503_that_may_have_been_applied() -> (
    None
):
    cluster = Cluster("a")
    cluster.directory.owners["s1"] = "a"
    cluster.directory.gone.add("a")  # even though "a" is gone: it may have applied it
    cluster.transport.failures["a"] = CarryFailed("no reply within 30 s", may_have_applied=True)
    async with cluster.client() as client:
        response = await client.post(PROMPT, content=b"{}")
    error = _error(response)
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("replica_unreachable", True)
    assert "(a)" in error["message"] and "may have been applied" in error["message"]
    assert cluster.transport.sent == ["a"]
    assert cluster.served_anywhere() == {}


# --- a new session ------------------------------------------------------------------------

CREATE = "/api/v1/tasks/t1/task-sessions"


async def test_a_new_session_is_created_on_the_replica_with_the_fewest_sessions() -> None:
    cluster = Cluster("b")
    cluster.directory.order = ["b", ME]
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b'{"agent":"x"}')
    assert response.json() == {"served_by": "b", "body": '{"agent":"x"}', "by": ME}
    assert cluster.served_anywhere().keys() == {"b"}


async def test_a_new_session_is_created_here_when_this_replica_has_the_fewest() -> None:
    cluster = Cluster("b")
    cluster.directory.order = [ME, "b"]
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b'{"agent":"x"}')
    assert response.json() == {"served_by": ME, "body": '{"agent":"x"}', "by": None}
    assert cluster.transport.sent == []


async def test_a_new_session_the_chosen_replica_never_received_is_created_here() -> None:
    cluster = Cluster("b")
    cluster.directory.order = ["b", ME]
    cluster.transport.failures["b"] = CarryFailed("no responders", may_have_applied=False)
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b'{"agent":"x"}')
    assert response.json() == {"served_by": ME, "body": '{"agent":"x"}', "by": None}
    assert cluster.transport.sent == ["b"]


async def test_a_new_session_the_chosen_replica_may_have_created_is_not_created_again() -> None:
    cluster = Cluster("b")
    cluster.directory.order = ["b", ME]
    cluster.transport.failures["b"] = CarryFailed("no reply", may_have_applied=True)
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b"{}")
    assert response.status_code == 503
    assert _error(response)["code"] == "replica_unreachable"
    assert cluster.served_anywhere() == {}


@pytest.mark.parametrize("trouble", ["empty", "fails"])
async def test_a_new_session_is_created_here_without_a_placement(trouble: str) -> None:
    cluster = Cluster("b")
    if trouble == "fails":
        cluster.directory.placement_fails = OSError("database unreachable")
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b"{}")
    assert response.json()["served_by"] == ME
    assert cluster.transport.sent == []


async def test_a_carried_session_creation_is_served_where_it_arrives() -> None:
    cluster = Cluster("b")
    cluster.directory.order = ["b", ME]
    async with cluster.client() as client:
        response = await client.post(CREATE, content=b"{}", headers={CARRIED_BY: "b"})
    assert response.json()["served_by"] == ME
    assert cluster.transport.sent == []


# --- an agent's MCP request ---------------------------------------------------------------


async def test_an_mcp_request_for_another_replicas_session_is_proxied_to_its_address() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    async with cluster.client() as client:
        response = await client.post("/mcp/sessions/s1", content=b"{}")
    assert (response.status_code, response.text) == (202, "proxied to b")
    ((path, owner),) = cluster[ME].mcp.proxied
    assert (path, owner.id, owner.advertise_url) == ("/mcp/sessions/s1", "b", "http://b:8787")
    assert cluster.transport.sent == []  # not over NATS: a tool call may wait for hours
    assert cluster.served_anywhere() == {}


async def test_an_mcp_request_for_a_session_whose_owner_has_no_live_row_is_refused() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    cluster.directory.live.discard("b")
    async with cluster.client() as client:
        response = await client.post("/mcp/sessions/s1", content=b"{}")
    error = _error(response)
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("replica_unavailable", True)
    assert error["replica"] == {"id": "b", "advertise_url": None}
    assert cluster[ME].mcp.proxied == [] and cluster.served_anywhere() == {}


@pytest.mark.parametrize("carried", [False, True], ids=["owned-here", "proxied-here"])
async def test_an_mcp_request_is_served_here_when_here_is_where_it_belongs(carried: bool) -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b" if carried else ME
    headers = {CARRIED_BY: "b"} if carried else {}
    async with cluster.client() as client:
        response = await client.post("/mcp/sessions/s1", content=b"{}", headers=headers)
    assert response.json()["served_by"] == ME
    assert cluster[ME].mcp.proxied == []


# --- sessions being adopted ---------------------------------------------------------------


async def test_a_request_for_a_session_being_recovered_waits_until_it_is_recovered() -> None:
    cluster = Cluster("b")
    cluster.directory.owners.update(s1=ME, s2=ME)
    gate = cluster[ME].gate
    await gate.recovering(["s1"])
    async with cluster.client() as client:
        posting = asyncio.ensure_future(client.post(PROMPT, content=b"late"))
        await asyncio.wait_for(gate.holding.wait(), CEILING_S)
        # Another session of this replica is served meanwhile.
        other = await client.post("/api/v1/task-sessions/s2/prompt", content=b"now")
        assert other.json()["served_by"] == ME
        assert not posting.done()
        assert [s.path for s in cluster[ME].served] == ["/api/v1/task-sessions/s2/prompt"]
        await gate.recovered(["s1"])
        response = await asyncio.wait_for(posting, CEILING_S)
    assert response.json() == {"served_by": ME, "body": "late", "by": None}


async def test_a_request_carried_here_for_a_session_being_recovered_waits_too() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = ME
    gate = cluster[ME].gate
    await gate.recovering(["s1"])
    async with cluster.client("b") as client:
        posting = asyncio.ensure_future(client.post(PROMPT, content=b"carried"))
        await asyncio.wait_for(gate.holding.wait(), CEILING_S)
        assert not posting.done() and cluster[ME].served == []
        await gate.recovered(["s1"])
        response = await asyncio.wait_for(posting, CEILING_S)
    assert response.json() == {"served_by": ME, "body": "carried", "by": "b"}


async def test_while_this_replica_adopts_a_request_for_its_session_waits() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = ME
    gate = cluster[ME].gate
    async with cluster.client() as client:
        async with gate.adopting():
            posting = asyncio.ensure_future(client.post(PROMPT, content=b"{}"))
            await asyncio.wait_for(gate.holding.wait(), CEILING_S)
            assert not posting.done() and cluster[ME].served == []
        response = await asyncio.wait_for(posting, CEILING_S)
    assert json.loads(response.content)["served_by"] == ME


# --- remembering routes -------------------------------------------------------------------


async def test_a_route_is_read_once_while_its_owner_lives_here_or_on_another_replica() -> None:
    """A session leaves its owner only once the owner is gone, so a route stays true while
    its owner lives: a carried request costs no read of the owner once it is known."""
    cluster = Cluster("b")
    cluster.directory.owners.update({"mine": ME, "theirs": "b"})
    async with cluster.client() as client:
        for _ in range(3):
            for session in ("mine", "theirs"):
                response = await client.post(f"/api/v1/task-sessions/{session}/prompt")
                assert response.status_code == 200, response.text
    assert cluster.directory.asked.count(("session", "mine")) == 1
    # Once here, and once on b, where the carried request's session is b's own.
    assert cluster.directory.asked.count(("session", "theirs")) == 1 + 1
    assert len(cluster[ME].served) == 3 and len(cluster["b"].served) == 3


async def test_routes_to_a_replica_known_gone_are_read_every_time_and_never_remembered() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["theirs"] = "b"
    async with cluster.client() as client:
        assert (await client.post("/api/v1/task-sessions/theirs/prompt")).status_code == 200
        cluster[ME].routing.owner_gone("b")  # the peer watch saw it, or its adopter said so
        for _ in range(2):
            assert (await client.post("/api/v1/task-sessions/theirs/prompt")).status_code == 200
    assert cluster.directory.asked.count(("session", "theirs")) == 3 + 1  # + b's own, once
    assert len(cluster["b"].served) == 3


async def test_a_remembered_route_nobody_answers_for_is_read_again_and_reaches_the_adopter() -> (
    None
):
    cluster = Cluster("a", "c")
    cluster.directory.owners["s1"] = "a"
    async with cluster.client() as client:
        assert (await client.post(PROMPT, content=b"known")).json()["served_by"] == "a"
        # "a" dies before this replica hears of it; "c" adopts its session.
        cluster.directory.gone.add("a")
        cluster.transport.failures["a"] = CarryFailed("no responders", may_have_applied=False)
        cluster.directory.owners["s1"] = "c"
        response = await asyncio.wait_for(client.post(PROMPT, content=b"hello"), CEILING_S)
        again = await client.post(PROMPT, content=b"again")
    assert response.json() == {"served_by": "c", "body": "hello", "by": ME}
    assert again.json()["served_by"] == "c"
    assert cluster.transport.sent == ["a", "a", "c", "c"]
    # Here: the first read, then one afresh once "a" did not answer (c's route is remembered
    # in its turn); "a" and "c" each read their own session once.
    assert cluster.directory.asked.count(("session", "s1")) == 2 + 1 + 1


async def test_a_remembered_route_whose_owner_did_not_reply_is_read_afresh_next_time() -> None:
    cluster = Cluster("a")
    cluster.directory.owners["s1"] = "a"
    async with cluster.client() as client:
        assert (await client.post(PROMPT, content=b"{}")).status_code == 200
        cluster.transport.failures["a"] = CarryFailed("no reply within 30 s", may_have_applied=True)
        lost = await client.post(PROMPT, content=b"{}")
        assert _error(lost)["code"] == "replica_unreachable"
        del cluster.transport.failures["a"]
        assert (await client.post(PROMPT, content=b"{}")).status_code == 200
    here = [a for a in cluster.directory.asked if a == ("session", "s1")]
    assert len(here) == 2 + 1  # the first and the one after the lost reply; a's own once


async def test_an_mcp_request_for_another_replicas_session_reads_its_route_every_time() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    async with cluster.client() as client:
        for _ in range(2):
            response = await client.post("/mcp/sessions/s1", content=b"{}")
            assert response.status_code == 202, response.text
    assert cluster.directory.asked == [("session", "s1")] * 2
    assert [owner.id for _, owner in cluster[ME].mcp.proxied] == ["b", "b"]


# --- placement -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "order"),
    [
        ([("a", 0), ("b", 0), (ME, 0)], [ME, "a", "b"]),  # among equals, here: no hop
        ([("a", 0), (ME, 1), ("b", 1)], ["a", ME, "b"]),  # fewer elsewhere: there
        ([("a", 2), ("b", 3)], ["a", "b"]),  # not serving (yet): the others, fewest first
        ([], []),
    ],
)
def test_a_new_session_goes_to_the_fewest_sessions_and_among_equals_stays_here(
    counts: list[tuple[str, int]], order: list[str]
) -> None:
    assert routing.placement_order(counts, ME) == order


# --- answer links -------------------------------------------------------------------------


async def test_an_answer_through_a_link_is_carried_to_the_owner_of_the_bundle_it_names() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    cluster.directory.bundles["p1"] = "s1"
    async with cluster.client() as client:
        response = await client.post("/api/v1/a/good-token/respond", content=b"{}")
        read = await client.get("/api/v1/a/good-token")
    assert response.json() == {"served_by": "b", "body": "{}", "by": ME}
    assert read.json()["served_by"] == "b"
    assert cluster["b"].served[0].path == "/api/v1/a/good-token/respond"


async def test_a_bad_link_token_is_served_here_without_asking_who_owns_anything() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    cluster.directory.bundles["p1"] = "s1"
    async with cluster.client() as client:
        response = await client.post("/api/v1/a/forged/respond", content=b"{}")
    assert response.json()["served_by"] == ME
    assert cluster.directory.asked == []
    assert cluster.transport.sent == []


async def test_a_decision_through_a_link_is_carried_to_the_owner_of_the_request_it_names() -> None:
    cluster = Cluster("b")
    cluster.directory.owners["s1"] = "b"
    cluster.directory.messages["m1"] = "s1"
    async with cluster.client() as client:
        response = await client.post("/api/v1/p/good-decision/respond", content=b"{}")
        read = await client.get("/api/v1/p/good-decision")
        # An answer link's token is not a decision link's: served here, where it is refused.
        crossed = await client.post("/api/v1/p/good-token/respond", content=b"{}")
    assert response.json() == {"served_by": "b", "body": "{}", "by": ME}
    assert read.json()["served_by"] == "b"
    assert crossed.json()["served_by"] == ME
    assert cluster["b"].served[0].path == "/api/v1/p/good-decision/respond"
