"""The idle-agent rows of the table, from one `bench.idle_agents` measurement."""

from __future__ import annotations

from bench.idle_agents import IdleAgents
from bench.stats import Row, ms, percentile

_MIB = 2**20
_GIB = 2**30


def idle_agents_rows(db: str, r: IdleAgents) -> list[Row]:
    n, largest = r.sessions, r.largest
    cut = (
        f"; the set-up budget ({r.setup_budget_s:.0f} s) ran out at {n:,} of {r.target:,}"
        if n < r.target
        else ""
    )
    how = (
        f"set up in waves of {r.wave} ({len(r.waves)} waves, at most {r.most_agents} agents "
        f"running at once, {r.setup_s:.0f} s{cut})"
    )
    measured = (
        f"server {largest.server / _MIB:.0f} MiB + {largest.agents} built-in agents at "
        f"{largest.per_agent / _MIB:.1f} MiB each ({len(largest.processes)} processes: agents, "
        "their sandboxes and process-group guards)"
    )
    if r.all_at_once:
        before = Row(
            db,
            f"RSS server + agents, {n} sessions with a detached question, agents running",
            f"{largest.total / _MIB:.0f} MiB",
            note=f"{measured}; 1,000 would be ~"
            f"{(largest.server + 1000 * largest.per_agent) / _GIB:.1f} GiB (projected)",
        )
    else:
        before = Row(
            db,
            f"RSS server + agents, {n} sessions with a detached question, agents running",
            f"~{r.projected_before / _GIB:.1f} GiB (projected)",
            note=(
                f"projected: the last wave's server {r.waves[-1].server / _MIB:.0f} MiB + {n:,} x "
                f"the per-agent RSS measured at the largest wave: {measured}, "
                f"{largest.total / _MIB:.0f} MiB in all; {how}"
            ),
        )
    growth = r.server_per_session
    per_session = "" if growth is None else f", +{growth / 1024:.0f} KiB per session over the waves"
    return [
        before,
        Row(
            db,
            f"RSS server + agents, {n} sessions, after the idle stop",
            f"{r.total_after / _MIB:.0f} MiB",
            "< 400 MiB",
            r.total_after < 400 * _MIB,
            note=(
                f"measured at {n:,} sessions; server {r.server_after / _MIB:.0f} MiB "
                f"({r.server_empty / _MIB:.0f} MiB before the first session{per_session}), "
                f"{len(r.agents_after)} agent processes left "
                f"(agent_idle_stop_after {r.idle_stop_s} s){cut}"
            ),
        ),
        Row(
            db,
            f"server idle CPU after the idle stop, {n} sessions",
            f"{r.idle_cpu * 100:.2f}% of a core",
            "< 1%",
            r.idle_cpu < 0.01,
            note=f"CPU seconds per second over {r.idle_cpu_window_s:g} s of quiet",
        ),
        Row(
            db,
            "answer POST -> 200 resumed, agent stopped while idle (restart) p50",
            f"{ms(percentile(r.restarts, 50)):.0f} ms",
            note=(
                f"{len(r.restarts)} answers; max {ms(max(r.restarts, default=0.0)):.0f} ms; the "
                "answer starts the agent (session/load) before the resume"
            ),
        ),
    ]
