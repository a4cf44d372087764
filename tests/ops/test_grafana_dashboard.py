"""The dashboard and the alert rules kept in the docs query only metrics Clarion exposes."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from clarion.metrics import MetricsExposition, PrometheusMetrics
from clarion.ports.metrics import OperationalFigures

DOCS = Path(__file__).resolve().parents[2] / "docs"
_NAME = re.compile(r"\bclarion_[a-z_]+")


class NoFigures:
    async def operational_figures(self) -> OperationalFigures:
        return OperationalFigures()


def _exposed() -> set[str]:
    async def render() -> bytes:
        exposition = MetricsExposition(PrometheusMetrics(), NoFigures(), lambda ids: _none())
        return (await exposition.render())[0]

    text = asyncio.run(render()).decode()
    families = list(text_string_to_metric_families(text))
    # A family with no series yet (no workspace waits) still declares its name.
    return {f.name for f in families} | {s.name for f in families for s in f.samples}


async def _none() -> set[str]:
    return set()


def test_every_dashboard_query_names_an_exposed_metric() -> None:
    dashboard = json.loads((DOCS / "grafana" / "clarion.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    named = {n for e in exprs for n in _NAME.findall(e)}
    assert len(exprs) >= 10 and named
    assert named <= _exposed(), named - _exposed()


def test_every_metric_the_operations_page_names_is_exposed() -> None:
    named = set(_NAME.findall((DOCS / "operations.md").read_text()))
    exposed = _exposed()
    # The page names histograms and counters by family; a family is exposed when its samples are.
    missing = {n for n in named if n not in exposed and f"{n}_count" not in exposed}
    assert not missing, missing
