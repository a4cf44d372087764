"""Scrape a server's `GET /metrics` and parse it with prometheus_client's own parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import ServerProcess

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(server: ServerProcess, headers: dict[str, str] | None = None) -> Samples:
    response = httpx.get(f"{server.url}/metrics", headers=headers or {}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]
