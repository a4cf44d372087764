"""The garbage collector's CPU time, by generation, as `/metrics` counters."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from clarion.metrics.gc_time import GcTime, process_gc_time


def _samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, s.labels.get("generation", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_each_collection_adds_its_thread_cpu_time_to_its_generation() -> None:
    clock = [10.0]
    times = GcTime(clock=lambda: clock[0])
    registry = CollectorRegistry()
    registry.register(times)
    times.on_gc("start", {"generation": 1})
    clock[0] += 0.25
    times.on_gc("stop", {"generation": 1, "collected": 3, "uncollectable": 0})
    times.on_gc("start", {"generation": 0})
    clock[0] += 0.5
    times.on_gc("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    samples = _samples(registry)
    assert samples[("clarion_gc_cpu_seconds_total", "0")] == 0.5
    assert samples[("clarion_gc_cpu_seconds_total", "1")] == 0.25
    assert samples[("clarion_gc_cpu_seconds_total", "2")] == 0
    assert samples[("clarion_gc_collections_total", "0")] == 1
    assert samples[("clarion_gc_collections_total", "1")] == 1
    assert samples[("clarion_gc_collections_total", "2")] == 0


def test_the_process_figure_counts_real_collections_once_however_many_servers_share_it() -> None:
    first, second = process_gc_time(), process_gc_time()
    assert first is second
    assert gc.callbacks.count(first.on_gc) == 1
    registry = CollectorRegistry()
    registry.register(first)
    before = _samples(registry)[("clarion_gc_collections_total", "2")]
    gc.collect()
    assert _samples(registry)[("clarion_gc_collections_total", "2")] == before + 1
