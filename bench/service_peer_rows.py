"""The service peers' rows, and Clarion's goals against Restate as ratios in the same run.

Goals (Clarion on each database against Restate's figures of the same run): the live answer ->
tool return p50 at most Restate's resolve -> next awakeable p50; cycles per second at 10 and
100 concurrent sessions at least Restate's; server CPU per cycle at most Restate's whole
server side (the Rust server and the Python service). LangGraph Server is recorded, with the
cause of its latency named.

A peer that cannot be installed here from its lockfile gives a row saying why (the smoke test
fails on that row where services are required).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from bench import langgraph_server_peer, restate_peer
from bench.context import progress
from bench.service_peers import PeerFigures, ServicePeer, measure
from bench.stats import Row, latency_rows, ms, percentile

ROUND_TRIP = {
    "restate": "resolve awakeable -> next awakeable published",
    "langgraph-server": "resume POST runs/wait -> next interrupt returned",
}
PROCESSES = {"restate": ("restate-server", "Python service"), "langgraph-server": ("server",)}


def _figure_rows(f: PeerFigures) -> list[Row]:
    rows = latency_rows(f.name, ROUND_TRIP[f.name], f.round_trip, p50_target=None, p99_target=None)
    if f.name == "langgraph-server":
        rows[0] = Row(
            rows[0].db,
            rows[0].name,
            rows[0].value,
            note=f"{rows[0].note}; cause: {langgraph_server_peer.CAUSE}",
        )
    for n, windows in f.windows.items():
        parts = ", ".join(
            f"{name} {sorted(ms(w.per_process[i]) for w in windows)[len(windows) // 2]:.2f} ms"
            for i, name in enumerate(PROCESSES[f.name])
        )
        client = sorted(ms(w.client_cpu_per_cycle) for w in windows)[len(windows) // 2]
        rows.append(
            Row(
                f.name,
                f"cycles/s, {n} concurrent; server-side CPU per cycle",
                f"{f.rate(n):.1f}; {ms(f.cpu(n)):.2f} ms",
                note=f"median of {len(windows)} windows ({sum(w.cycles for w in windows)} "
                f"cycles); {parts}; bench client {client:.2f} ms/cycle",
            )
        )
    return rows


def goal_rows(
    restate: PeerFigures,
    live_return_p50: dict[str, float],
    rates: dict[str, dict[int, float]],
    cpu: dict[str, dict[int, float]],
) -> list[Row]:
    """Clarion against Restate, per database: each ratio with its goal."""
    rows: list[Row] = []
    p50 = percentile(restate.round_trip, 50)
    for db, value in live_return_p50.items():
        rows.append(
            Row(
                db,
                "ratio: live tool return p50 / restate resolve -> next awakeable p50",
                f"{value / p50:.2f}x",
                "<= 1.0x",
                value / p50 <= 1.0,
                f"{ms(value):.1f} vs {ms(p50):.1f} ms",
            )
        )
    for db in rates:
        rows += _per_session_ratios(
            db,
            rates[db],
            restate,
            restate.rate,
            "cycles/s, {n} sessions / restate's, {n} workflows",
            at_least=True,
            note=lambda mine, theirs: f"{mine:.1f} vs {theirs:.1f} cycles/s",
        )
    for db in cpu:
        rows += _per_session_ratios(
            db,
            cpu[db],
            restate,
            restate.cpu,
            "server CPU per cycle, {n} sessions / restate's whole server side",
            at_least=False,
            note=lambda mine, theirs: f"{ms(mine):.2f} vs {ms(theirs):.2f} ms",
        )
    return rows


def _per_session_ratios(
    db: str,
    mine: dict[int, float],
    restate: PeerFigures,
    theirs: Callable[[int], float],
    measure: str,
    *,
    at_least: bool,
    note: Callable[[float, float], str],
) -> list[Row]:
    """`ratio: MEASURE` at 10 and 100 where both sides have a figure; the goal is 1.0x, met
    at or above it (`at_least`) or at or below it."""
    out: list[Row] = []
    for n in (10, 100):
        if n not in mine or n not in restate.windows:
            continue
        ratio = mine[n] / theirs(n)
        out.append(
            Row(
                db,
                f"ratio: {measure.format(n=n)}",
                f"{ratio:.2f}x",
                ">= 1.0x" if at_least else "<= 1.0x",
                ratio >= 1.0 if at_least else ratio <= 1.0,
                note(mine[n], theirs(n)),
            )
        )
    return out


Factory = Callable[[Path], ServicePeer]
PEERS: dict[str, tuple[Callable[[], str | None], Factory]] = {
    "restate": (restate_peer.install, restate_peer.RestatePeer),
    "langgraph-server": (langgraph_server_peer.install, langgraph_server_peer.LangGraphServerPeer),
}


async def rows(
    workdir: Path,
    samples: dict[str, int],
    counts: Sequence[int],
    seconds: float,
    warmup_s: float,
    rounds: dict[str, int],
    *,
    peers: dict[str, tuple[Callable[[], str | None], Factory]] | None = None,
) -> tuple[list[Row], dict[str, PeerFigures]]:
    """Each peer's rows (or the reason it could not run) and its figures."""
    out: list[Row] = []
    figures: dict[str, PeerFigures] = {}
    for name, (install, factory) in (PEERS if peers is None else peers).items():
        problem = install()
        if problem is not None:
            out.append(Row(name, "service peer", "not installed", note=problem))
            continue
        progress(f"service peer {name}")
        f = await measure(factory(workdir), samples[name], counts, seconds, warmup_s, rounds[name])
        figures[name] = f
        out += _figure_rows(f)
    return out, figures
