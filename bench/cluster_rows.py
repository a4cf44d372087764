"""The cluster rows from each replica count's rounds, and what each replica added costs.

Each replica count is measured `rounds` times, the counts in turn, so that the host's drift
over the minutes the phase takes spreads over all of them (one window each read 10.15 -> 15.42
-> 13.47 ms per cycle for 1, 2 and 3 replicas on a host that slowed as it ran). The CPU row is
the median of a count's windows; the latency rows pool its rounds' answers. The cost of a
replica added is the median over the rounds of (CPU per cycle at the most replicas - at one)
/ (replicas added). With redirects to the owner followed, the most replicas' windows are
compared with the same rounds' one-replica windows the same way; those rows keep to the
server's CPU and the answer posted to another replica, what the redirect changes.

Each window also reads every replica's `clarion_gc_cpu_seconds_total` before and after it
(`bench.cluster.window_counters`): the CPU rows say how much of the median window's CPU per
cycle was the garbage collector's, in all and per replica, and the cost of a replica added
says how much of it was the collector's growth, the median over the rounds the same way. A
profile of the added replica's cost found no Python path that grows with replicas, and the
collector at 4-40% of the samples by window (docs/benchmarks-history.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench import throughput
from bench.stats import Row, ms, percentile

PER_REPLICA_LIMIT_MS = 0.5


@dataclass(frozen=True)
class ClusterResult:
    replicas: int
    # Its `counted_per_cycle`: each replica's garbage collector CPU seconds (replica order),
    # then the NATS deliveries when they are counted (`bench.cluster.window_counters`).
    throughput: throughput.McpThroughput
    via_owner: tuple[list[float], list[float]]  # (POST -> 200, POST -> tool call returns)
    via_other: tuple[list[float], list[float]] | None
    carried: int | None = None  # requests the replicas carried over the measurement

    @property
    def gc_per_cycle(self) -> tuple[float, ...]:
        """Each replica's garbage collector CPU seconds per cycle, in replica order."""
        return self.throughput.counted_per_cycle[: self.replicas]

    @property
    def nats_per_cycle(self) -> tuple[float, ...]:
        """(bus messages, bus bytes, request-reply messages) per cycle, or () if not counted."""
        return self.throughput.counted_per_cycle[self.replicas :]


def _pooled(
    samples: list[tuple[list[float], list[float]] | None],
) -> tuple[list[float], list[float]] | None:
    present = [s for s in samples if s is not None]
    if not present:
        return None
    return [x for s in present for x in s[0]], [x for s in present for x in s[1]]


def _median(taken: list[ClusterResult]) -> ClusterResult:
    """The result whose window's server CPU per cycle is the median."""
    return sorted(taken, key=lambda r: r.throughput.server_cpu_per_cycle)[len(taken) // 2]


def _cpu_note(taken: list[ClusterResult]) -> str:
    median = _median(taken)
    median_window = median.throughput
    each = ", ".join(f"{ms(r.throughput.server_cpu_per_cycle):.2f}" for r in taken)
    per_replica = ", ".join(f"{ms(c):.2f}" for c in median_window.process_cpu_per_cycle)
    gc_each = ", ".join(f"{ms(c):.2f}" for c in median.gc_per_cycle)
    moved = [r.carried for r in taken if r.carried is not None]
    carried = f"; carried {', '.join(map(str, moved))} requests" if moved else ""
    return (
        f"windows {each} ms; the median window {ms(median_window.server_cpu_per_cycle):.2f} ms, "
        f"of which the garbage collector {ms(sum(median.gc_per_cycle)):.2f} ms; "
        f"per replica {per_replica} ms, of which the garbage collector {gc_each} ms; "
        f"bench client {ms(median_window.client_cpu_per_cycle):.2f} ms/cycle{carried}"
    )


def _answer_row(label: str, where: str, samples: tuple[list[float], list[float]]) -> Row:
    to_200, to_return = samples
    return Row(
        "postgres",
        f"{label}: live answer POST -> MCP tool call returns p50, posted to {where}",
        f"{ms(percentile(to_return, 50)):.1f} ms",
        note=(
            f"n={len(to_return)}; p99 {ms(percentile(to_return, 99)):.1f} ms; "
            f"POST -> 200 p50 {ms(percentile(to_200, 50)):.1f} ms"
        ),
    )


def _count_rows(n: int, taken: list[ClusterResult], sessions: int) -> list[Row]:
    label = f"cluster, {n} replica{'s' if n > 1 else ''}"
    windows = [r.throughput for r in taken]
    median = _median(taken)
    # Each replica runs its share of the sessions, carries the answers it receives for the
    # others' sessions, and receives every cycle's events over NATS.
    crossed = ""
    if median.nats_per_cycle:
        events, event_bytes, requests = median.nats_per_cycle
        crossed = (
            f"; NATS delivered per cycle: {events:.1f} events ({event_bytes:.0f} B), "
            f"{requests:.1f} request-reply messages"
        )
    rows = [
        Row(
            "postgres",
            f"{label}: throughput, {sessions} sessions (MCP clients)",
            f"{statistics.median(t.rate for t in windows):.1f} cycles/s",
            note=(
                f"median of {len(windows)} windows ({sum(t.cycles for t in windows)} cycles); "
                f"HTTP round-robin over {n} replica{'s' if n > 1 else ''}" + crossed
            ),
        ),
        Row(
            "postgres",
            f"{label}: server CPU per cycle, {sessions} sessions, all replicas",
            f"{ms(median.throughput.server_cpu_per_cycle):.2f} ms",
            note=_cpu_note(taken),
        ),
    ]
    for where, samples in (
        ("the session's replica", _pooled([r.via_owner for r in taken])),
        ("another replica", _pooled([r.via_other for r in taken])),
    ):
        if samples is not None:
            rows.append(_answer_row(label, where, samples))
    return rows


@dataclass(frozen=True)
class _Added:
    """Each round's CPU per cycle added per replica (ms), and the collector's part of it."""

    cpu: list[float]
    gc: list[float]

    @property
    def cost(self) -> float:
        return statistics.median(self.cpu)


def _added(ones: list[ClusterResult], bigs: list[ClusterResult], most: int) -> _Added:
    """Each round's (CPU per cycle at `most` replicas - at one) / (replicas added), and the
    same for the garbage collector's CPU (summed over the replicas)."""
    pairs = list(zip(ones, bigs, strict=True))
    return _Added(
        cpu=[
            ms(big.throughput.server_cpu_per_cycle - one.throughput.server_cpu_per_cycle)
            / (most - 1)
            for one, big in pairs
        ],
        gc=[ms(sum(big.gc_per_cycle) - sum(one.gc_per_cycle)) / (most - 1) for one, big in pairs],
    )


def _cost_row(name: str, most: int, added: _Added) -> Row:
    cost = added.cost
    return Row(
        "postgres",
        name,
        f"{cost:+.2f} ms",
        f"<= +{PER_REPLICA_LIMIT_MS:g} ms",
        cost <= PER_REPLICA_LIMIT_MS,
        f"median of the rounds' (1 -> {most} replicas) / {most - 1} "
        f"({', '.join(f'{a:+.2f}' for a in added.cpu)} ms): {cost:+.2f} ms per cycle, "
        f"of which the garbage collector {statistics.median(added.gc):+.2f} ms "
        f"(rounds {', '.join(f'{g:+.2f}' for g in added.gc)} ms)",
    )


def _redirect_rows(
    most: int, redirected: list[ClusterResult], ones: list[ClusterResult], sessions: int
) -> list[Row]:
    label = f"cluster, {most} replicas, redirects followed"
    rows = [
        Row(
            "postgres",
            f"{label}: server CPU per cycle, {sessions} sessions, all replicas",
            f"{ms(_median(redirected).throughput.server_cpu_per_cycle):.2f} ms",
            note=_cpu_note(redirected),
        )
    ]
    via_other = _pooled([r.via_other for r in redirected])
    if via_other is not None:
        rows.append(_answer_row(label, "another replica", via_other))
    if len(ones) == len(redirected):
        name = (
            f"cluster: server CPU per cycle added per replica with redirects, {sessions} sessions"
        )
        rows.append(_cost_row(name, most, _added(ones, redirected, most)))
    return rows


def cluster_rows(
    taken: dict[int, list[ClusterResult]],
    sessions: int,
    redirected: list[ClusterResult] | None = None,
) -> list[Row]:
    """Every count's rows (its results in round order), then the cost of a replica added;
    then, with `redirected` (the most replicas' rounds with redirects followed), theirs."""
    rows = [row for n, results in taken.items() for row in _count_rows(n, results, sessions)]
    fewest, most = min(taken), max(taken)
    if fewest == 1 and most > 1:
        name = f"cluster: server CPU per cycle added per replica, {sessions} sessions"
        rows.append(_cost_row(name, most, _added(taken[1], taken[most], most)))
    if redirected and most > 1:
        rows += _redirect_rows(most, redirected, taken.get(1, []), sessions)
    return rows
