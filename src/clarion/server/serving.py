"""A server's life: hold the database (alone, or as a cluster replica), bind HTTP, run startup
recovery (a replica: on the sessions it adopted at start), and only then admit work; a
replica then watches its peers to adopt those that stop. Builds the services through
`clarion.server.wiring`; the CLI's `clarion serve` calls `run_server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

import uvicorn
from starlette.types import ASGIApp

from clarion.api.app import create_app
from clarion.api.trace_context import with_trace_context
from clarion.bus.unavailable import NatsUnavailable
from clarion.clarification.asker import Asker
from clarion.config import Settings
from clarion.config.files import redacted
from clarion.domain.scope import EVERY_SESSION
from clarion.orchestrator.recovery import RecoveryReport
from clarion.ports import AgentRuntime
from clarion.server.collector import settle_after_startup
from clarion.server.sample import offer_sample_task
from clarion.server.stopping import GracefulStop
from clarion.server.wiring import build
from clarion.store.db.single_server import AnotherServer, single_server

try:  # the C HTTP parser where installed (a dependency on Linux and macOS); h11 otherwise
    import httptools  # noqa: F401

    _HTTP_PROTOCOL = "httptools"
except ImportError:
    _HTTP_PROTOCOL = "h11"

log = logging.getLogger(__name__)


# How long an idle kept-alive connection stays open. Clients close theirs after a few idle
# seconds (Node's fetch: 4 s); a server that closed first (uvicorn's default, 5 s) raced the
# client's next request on it, and on a loaded machine an MCP tool call was lost that way with
# nothing reaching the server. Well above every client's, so closing is the client's move.
HTTP_KEEP_ALIVE_S = 75

# How long a stop waits for requests in flight (an answer's live confirmation among them)
# before it cancels them; then the agents are stopped and the rest of the shutdown runs.
# Within the 30 s Kubernetes and Docker give a stopped service before they kill it.
DRAIN_S = 15.0

__all__ = ["AnotherServer", "RecoveryFailed", "ServiceUnreachable", "run_server"]


class RecoveryFailed(Exception):
    """Startup recovery failed; the server did not admit any work."""


class ServiceUnreachable(Exception):
    """The database or NATS could not be reached at start; nothing was served."""


@contextlib.contextmanager
def _reaching(settings: Settings) -> Iterator[None]:
    """Name what could not be reached, in one line, instead of a driver's traceback."""
    try:
        yield
    except NatsUnavailable as exc:  # its message names the NATS URL
        raise ServiceUnreachable(str(exc)) from exc
    except OSError as exc:  # refused, unresolvable, timed out: the drivers raise these
        where = redacted(settings.database_url)
        raise ServiceUnreachable(f"cannot reach the database at {where}: {exc}") from exc


async def run_server(
    settings: Settings, on_listening: Callable[[str], None]
) -> RecoveryReport | None:
    """Serve until SIGTERM or SIGINT (one graceful stop: clarion.server.stopping). Raises
    RecoveryFailed if startup recovery fails; returns None when stopped before recovery."""
    base = {"url": f"http://{_client_host(settings.host)}:{settings.port}"}
    stop = GracefulStop()
    async with contextlib.AsyncExitStack() as stack:
        # First in, so last out: a signal during the shutdown below is the operator's "now".
        stack.enter_context(stop.installed(asyncio.get_running_loop()))
        # Runs after everything else here closed: agents stopped, spans flushed, replica left.
        stack.callback(_stopped, stop)
        # Before anything touches the database: a second server's recovery would detach the
        # first one's live questions. Raises AnotherServer (the CLI exits 3) when one is running.
        cluster = None
        with _reaching(settings):
            if settings.cluster:
                # Imported only here: a single server does not load the NATS client.
                from clarion.server.cluster import cluster_mode

                cluster = await stack.enter_async_context(cluster_mode(settings))
            else:
                await stack.enter_async_context(single_server(settings.database_url))
            # Agents reach their MCP endpoint at the address peers know this replica by.
            app = await stack.enter_async_context(
                build(settings, lambda: settings.advertise_url or base["url"])
            )
        api = create_app(app.services, app.mcp)
        asgi: ASGIApp = api
        joined = None
        if cluster is not None:
            joined, asgi = await cluster.attach(
                app, api, settings, lambda: _running_count(app.runtime)
            )
        # Outermost: a request carried to another replica is part of its caller's trace too.
        asgi = with_trace_context(asgi, app.tracer)
        config = uvicorn.Config(
            asgi,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            access_log=False,  # request lines could carry a `?token=`
            lifespan="on",
            http=_HTTP_PROTOCOL,
            # Notifications are small JSON frames sent once per connection each: compressing
            # every one cost more server CPU than any other step of sending it.
            ws_per_message_deflate=False,
            timeout_keep_alive=HTTP_KEEP_ALIVE_S,
            timeout_graceful_shutdown=int(DRAIN_S),
        )
        server = _Server(config)
        stop.then(lambda sig: _stop_admitting(server, app.services.asker, sig))
        serving = asyncio.ensure_future(server.serve())
        beats: asyncio.Future[None] | None = None
        watching: asyncio.Future[None] | None = None
        try:
            while not server.started:
                if serving.done():
                    await serving
                    if stop.requested:
                        return None
                    raise RecoveryFailed("HTTP server stopped before it started listening")
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            base["url"] = f"http://{_client_host(settings.host)}:{port}"
            on_listening(base["url"])
            if stop.requested:  # before recovery: nothing was admitted, nothing to finish
                await serving
                return None
            scope = EVERY_SESSION
            if joined is not None:
                await joined.replica.join(settings.advertise_url or base["url"])
                beats = asyncio.ensure_future(joined.replica.heartbeats())
                joined.own_sessions()
                # Recovery acts on the sessions this replica adopted, and on no other: the
                # other replicas' sessions are live, and a dead one's go to whoever adopts it.
                scope = await joined.adopt_orphans()
            try:
                report = await app.recovery.run(scope)
            except Exception as exc:
                log.exception("startup recovery failed")
                raise RecoveryFailed(f"startup recovery failed: {exc}") from exc
            settle_after_startup()
            app.start_deadlines(joined.replica.replica_id if joined is not None else None)
            app.start_retention()
            app.services.ready.set()
            if joined is not None:
                await joined.replica.serving()
                watching = asyncio.ensure_future(joined.watch_peers())
            else:
                # First start on an empty database: a sample task that asks (clarion.server.sample).
                # Not for a cluster: its replicas start together, and each would offer one.
                await offer_sample_task(app.services)
            await serving
            return report
        finally:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await serving
            for running in (watching, beats):
                if running is not None:
                    running.cancel()
                    with contextlib.suppress(BaseException):
                        await running


def _stopped(stop: GracefulStop) -> None:
    log.info("server stopped", extra={"signal": None if stop.signal is None else stop.signal.name})


def _stop_admitting(server: uvicorn.Server, asker: Asker, sig: signal.Signals) -> None:
    """Detach the questions agents wait on: their tool calls end now (the questions stay
    answerable) instead of holding the stop until the drain limit. Then stop uvicorn the
    way its own signal handler does, which also ends the agents' MCP event streams
    (sse_starlette hooks that handler, and would wait for the drain limit otherwise)."""
    asker.detach_all()
    server.handle_exit(sig, None)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: it would raise a captured SIGTERM again once
    serving ends, which kills the process before the server's shutdown runs."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _running_count(runtime: AgentRuntime) -> int:
    """Sessions whose agent runs here; only the ACP runtime counts them (0 for test doubles)."""
    count = getattr(runtime, "running_count", None)
    return int(count()) if callable(count) else 0


def _client_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
