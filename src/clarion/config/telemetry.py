"""`[telemetry]` from the config file: where traces go, if anywhere. Without the section the
server traces nothing and never loads OpenTelemetry. The table's shape is checked by its model
(`clarion.config.tables`); imports nothing internal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Exporter = Literal["otlp", "console"]
# The OTLP/HTTP path of traces under a collector's base address.
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """`exporter = "otlp"` sends spans over OTLP/HTTP (protobuf) to `endpoint`;
    `exporter = "console"` prints them on standard output, one JSON object each."""

    exporter: Exporter
    endpoint: str | None = None  # the full traces URL (`.../v1/traces`) for OTLP
    service_name: str = "clarion"


def traces_url(endpoint: str) -> str:
    """A collector's base address as its traces URL (`/v1/traces` added once)."""
    base = endpoint.rstrip("/")
    if urlsplit(base).path.endswith(TRACES_PATH):
        return base
    return base + TRACES_PATH
