"""Figures and the table: percentiles, one row per measurement, target verdicts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def ms(seconds: float) -> float:
    return seconds * 1000


@dataclass(frozen=True)
class Row:
    db: str
    name: str
    value: str
    target: str = ""
    met: bool | None = None
    note: str = ""

    @property
    def verdict(self) -> str:
        return "" if self.met is None else ("met" if self.met else "MISSED")


def latency_rows(
    db: str,
    name: str,
    samples: Sequence[float],
    *,
    p50_target: float | None,
    p99_target: float | None,
) -> list[Row]:
    """p50 and p99 rows (milliseconds) with verdicts against the targets (ms) when given."""
    p50, p99 = ms(percentile(samples, 50)), ms(percentile(samples, 99))
    n = f"n={len(samples)}"
    return [
        Row(
            db,
            f"{name} p50",
            f"{p50:.1f} ms",
            f"<= {p50_target:g} ms" if p50_target else "",
            None if p50_target is None else p50 <= p50_target,
            n,
        ),
        Row(
            db,
            f"{name} p99",
            f"{p99:.1f} ms",
            f"<= {p99_target:g} ms" if p99_target else "",
            None if p99_target is None else p99 <= p99_target,
            n,
        ),
    ]


def render(rows: Sequence[Row]) -> str:
    """A Markdown table, readable on a terminal too."""
    header = ("db", "measurement", "value", "target", "verdict", "note")
    cells = [header] + [(r.db, r.name, r.value, r.target, r.verdict, r.note) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = [
        "| " + " | ".join(c[i].ljust(widths[i]) for i in range(len(header))) + " |" for c in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
