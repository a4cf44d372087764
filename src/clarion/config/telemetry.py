"""`[telemetry]` from the config file: where traces go, if anywhere. Without the section the
server traces nothing and never loads OpenTelemetry. Imports only the configuration readers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from clarion.config.files import http_url, read_config

Exporter = Literal["otlp", "console"]
_KEYS = frozenset({"exporter", "endpoint", "service_name"})
# The OTLP/HTTP path of traces under a collector's base address.
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """`exporter = "otlp"` sends spans over OTLP/HTTP (protobuf) to `endpoint`;
    `exporter = "console"` prints them on standard output, one JSON object each."""

    exporter: Exporter
    endpoint: str | None = None  # the full traces URL (`.../v1/traces`) for OTLP
    service_name: str = "clarion"


def load_telemetry(config_file: str | None) -> TelemetrySettings | None:
    """`[telemetry] exporter = "otlp" | "console"`, `endpoint = "http://collector:4318"`
    (OTLP only), optional `service_name` (default `clarion`). None without the section."""
    if not config_file:
        return None
    path = Path(config_file)
    spec = read_config(path).get("telemetry")
    if spec is None:
        return None
    where = f"{path}: telemetry"
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: [telemetry] must be a table")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(
            f"{path}: [telemetry]: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_KEYS))}"
        )
    exporter = spec.get("exporter")
    if exporter not in ("otlp", "console"):
        raise ValueError(f'{where}.exporter must be "otlp" or "console", got {exporter!r}')
    service_name = spec.get("service_name", "clarion")
    if not isinstance(service_name, str) or not service_name.strip():
        raise ValueError(f"{where}.service_name must be a non-empty string")
    raw_endpoint = spec.get("endpoint")
    if exporter == "console":
        if raw_endpoint is not None:
            raise ValueError(f'{where}.endpoint is for exporter = "otlp" only')
        return TelemetrySettings(exporter="console", service_name=service_name.strip())
    if raw_endpoint is None:
        raise ValueError(
            f'{where}.endpoint is required with exporter = "otlp" '
            '(the collector\'s OTLP/HTTP address, e.g. "http://127.0.0.1:4318")'
        )
    endpoint = traces_url(http_url(raw_endpoint, f"{where}.endpoint"))
    return TelemetrySettings(exporter="otlp", endpoint=endpoint, service_name=service_name.strip())


def traces_url(endpoint: str) -> str:
    """A collector's base address as its traces URL (`/v1/traces` added once)."""
    base = endpoint.rstrip("/")
    if urlsplit(base).path.endswith(TRACES_PATH):
        return base
    return base + TRACES_PATH
