"""The cluster rows from their rounds: medians, pooled answers, the cost of a replica added, and
the garbage collector's part of each."""

from __future__ import annotations

from bench.cluster_rows import ClusterResult, cluster_rows
from bench.throughput import McpThroughput


def _result(
    n: int,
    cpu_ms: float,
    answers: list[float],
    carried: int | None = None,
    gc_ms: float = 0.1,
    nats: tuple[float, ...] = (),
) -> ClusterResult:
    """`gc_ms`: each replica's garbage collector CPU per cycle; `nats`: the deliveries."""
    t = McpThroughput(
        rate=80.0,
        cycles=400,
        server_cpu_per_cycle=cpu_ms / 1000,
        client_cpu_per_cycle=0.006,
        process_cpu_per_cycle=tuple(cpu_ms / 1000 / n for _ in range(n)),
        counted_per_cycle=tuple(gc_ms / 1000 for _ in range(n)) + nats,
    )
    seconds = [a / 1000 for a in answers]
    via_other = (seconds, seconds) if n > 1 else None
    return ClusterResult(n, t, (seconds, seconds), via_other, carried=carried)


def test_a_replica_added_costs_the_median_of_the_rounds_own_differences() -> None:
    # Round 2 ran on a slow host: one replica cost 12 ms there, three 13.5.
    taken = {
        1: [_result(1, 9.0, [8.0]), _result(1, 12.0, [9.0]), _result(1, 9.2, [10.0])],
        3: [_result(3, 10.2, [11.0]), _result(3, 13.5, [12.0]), _result(3, 11.4, [13.0])],
    }
    rows = {row.name: row for row in cluster_rows(taken, 10)}
    added = rows["cluster: server CPU per cycle added per replica, 10 sessions"]
    # (10.2 - 9.0) / 2 = 0.60, (13.5 - 12.0) / 2 = 0.75, (11.4 - 9.2) / 2 = 1.10
    assert (added.value, added.target, added.met) == ("+0.75 ms", "<= +0.5 ms", False)
    assert "(+0.60, +0.75, +1.10 ms)" in added.note
    one_cpu = rows["cluster, 1 replica: server CPU per cycle, 10 sessions, all replicas"]
    assert one_cpu.value == "9.20 ms"
    assert one_cpu.note.startswith(
        "windows 9.00, 12.00, 9.20 ms; the median window 9.20 ms, "
        "of which the garbage collector 0.10 ms; "
        "per replica 9.20 ms, of which the garbage collector 0.10 ms; "
    )
    returns = "live answer POST -> MCP tool call returns p50"
    other = rows[f"cluster, 3 replicas: {returns}, posted to another replica"]
    assert (other.value, other.note.split(";")[0]) == ("12.0 ms", "n=3")


def test_a_single_replica_count_has_no_added_cost_row() -> None:
    rows = cluster_rows({2: [_result(2, 11.0, [9.0])]}, 10)
    assert not any("added per replica" in row.name for row in rows)
    assert len(rows) == 4


def test_with_redirects_the_most_replicas_cost_is_compared_with_the_same_rounds_one() -> None:
    taken = {
        1: [_result(1, 9.0, [8.0]), _result(1, 12.0, [9.0]), _result(1, 9.2, [10.0])],
        3: [_result(3, 11.0, [11.0]), _result(3, 14.0, [12.0]), _result(3, 11.4, [13.0])],
    }
    redirected = [
        _result(3, 9.6, [7.0], carried=12),
        _result(3, 12.4, [8.0], carried=12),
        _result(3, 10.2, [9.0], carried=13),
    ]
    rows = {row.name: row for row in cluster_rows(taken, 10, redirected)}
    added = rows["cluster: server CPU per cycle added per replica with redirects, 10 sessions"]
    # (9.6 - 9.0) / 2 = 0.30, (12.4 - 12.0) / 2 = 0.20, (10.2 - 9.2) / 2 = 0.50
    assert (added.value, added.target, added.met) == ("+0.30 ms", "<= +0.5 ms", True)
    assert "(+0.30, +0.20, +0.50 ms)" in added.note
    label = "cluster, 3 replicas, redirects followed"
    cpu = rows[f"{label}: server CPU per cycle, 10 sessions, all replicas"]
    assert cpu.value == "10.20 ms" and cpu.note.endswith("; carried 12, 12, 13 requests")
    returns = "live answer POST -> MCP tool call returns p50"
    other = rows[f"{label}: {returns}, posted to another replica"]
    assert other.value == "8.0 ms"
    # Only what the redirect changes: the CPU, the answer through another replica, the cost.
    assert sum(name.startswith(label) for name in rows) == 2


def test_the_cpu_rows_and_the_added_cost_say_the_garbage_collectors_part() -> None:
    # The collector grows 0.2, 0.6 and 0.4 ms a replica in the three rounds; rounds 1 and 3
    # carry their NATS deliveries after the replicas' collector figures.
    nats = (30.0, 9000.0, 4.0)
    taken = {
        1: [
            _result(1, 9.0, [8.0], gc_ms=0.2, nats=nats),
            _result(1, 12.0, [9.0], gc_ms=0.3),
            _result(1, 9.2, [10.0], gc_ms=0.2, nats=nats),
        ],
        3: [
            _result(3, 10.2, [11.0], gc_ms=0.2, nats=nats),
            _result(3, 13.5, [12.0], gc_ms=0.5),
            _result(3, 11.4, [13.0], gc_ms=0.333333, nats=nats),
        ],
    }
    redirected = [
        _result(3, 9.6, [7.0], gc_ms=0.1),
        _result(3, 12.4, [8.0], gc_ms=0.2),
        _result(3, 10.2, [9.0], gc_ms=0.1),
    ]
    assert taken[3][0].gc_per_cycle == (0.0002, 0.0002, 0.0002)
    assert taken[3][0].nats_per_cycle == nats and taken[3][1].nats_per_cycle == ()
    rows = {row.name: row for row in cluster_rows(taken, 10, redirected)}
    three = rows["cluster, 3 replicas: server CPU per cycle, 10 sessions, all replicas"]
    # The median window is round 3's (11.4 ms): three replicas at 0.33 ms each.
    assert three.note.startswith(
        "windows 10.20, 13.50, 11.40 ms; the median window 11.40 ms, "
        "of which the garbage collector 1.00 ms; "
        "per replica 3.80, 3.80, 3.80 ms, of which the garbage collector 0.33, 0.33, 0.33 ms; "
    )
    throughput = rows["cluster, 3 replicas: throughput, 10 sessions (MCP clients)"]
    assert "NATS delivered per cycle: 30.0 events (9000 B), 4.0 request-reply" in throughput.note
    added = rows["cluster: server CPU per cycle added per replica, 10 sessions"]
    # The collector: (0.6 - 0.2) / 2 = 0.20, (1.5 - 0.3) / 2 = 0.60, (1.0 - 0.2) / 2 = 0.40.
    assert added.note.endswith(
        "(+0.60, +0.75, +1.10 ms): +0.75 ms per cycle, of which the garbage collector +0.40 ms "
        "(rounds +0.20, +0.60, +0.40 ms)"
    )
    with_redirects = rows[
        "cluster: server CPU per cycle added per replica with redirects, 10 sessions"
    ]
    # (0.3 - 0.2) / 2 = 0.05, (0.6 - 0.3) / 2 = 0.15, (0.3 - 0.2) / 2 = 0.05.
    assert with_redirects.note.endswith(
        "+0.30 ms per cycle, of which the garbage collector +0.05 ms "
        "(rounds +0.05, +0.15, +0.05 ms)"
    )
    redirected_cpu = rows[
        "cluster, 3 replicas, redirects followed: server CPU per cycle, 10 sessions, all replicas"
    ]
    assert "the median window 10.20 ms, of which the garbage collector 0.30 ms; " in (
        redirected_cpu.note
    )
