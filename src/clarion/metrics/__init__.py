"""Prometheus metrics: the in-process recorder and the `/metrics` exposition."""

from clarion.metrics.exposition import MetricsExposition
from clarion.metrics.recorder import PrometheusMetrics

__all__ = ["MetricsExposition", "PrometheusMetrics"]
